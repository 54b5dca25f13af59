import type { FastifyInstance } from 'fastify';
import type { Engine } from '../../engine/engine.js';
import { InvalidRequestError, UnsupportedGrantTypeError } from '../../engine/errors.js';
import type { TokenResponse } from '../../engine/results.js';
import { tokenEndpointCredentials } from '../credentials.js';
import { formOf, optional, required, type Form } from '../form.js';
import { TOKEN_PATH } from '../paths.js';
import { noStore } from '../reply.js';
import type { RequestNote, RouteDeps } from '../types.js';

/** Spec 4.1: POST /oauth/token with grant_type=refresh_token (RFC 6749 §6); answers spec 2.1. */
export async function tokenGrant(engine: Engine, form: Form, authorization: string | undefined, note: RequestNote): Promise<TokenResponse> {
  const grantType = form.grant_type;
  if (grantType === undefined || grantType === '') throw new InvalidRequestError('The parameter grant_type is missing', 'grant_type');
  if (grantType !== 'refresh_token') throw new UnsupportedGrantTypeError(grantType);
  const refreshToken = required(form, 'refresh_token');
  const scope = optional(form, 'scope');
  const authenticated = await engine.authenticateWithToken(tokenEndpointCredentials(authorization, form), refreshToken, note.ip);
  note.clientId = authenticated.client.id;
  const response = await engine.refreshAuthenticated(authenticated, scope);
  note.jti = response.jti;
  return response;
}

export function tokenRoute(app: FastifyInstance, { engine }: RouteDeps): void {
  app.post(TOKEN_PATH, async (request, reply) => {
    const response = await tokenGrant(engine, formOf(request), request.headers.authorization, request);
    return noStore(reply).send(response);
  });
}
