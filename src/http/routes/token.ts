import type { FastifyInstance } from 'fastify';
import { InvalidRequestError, UnsupportedGrantTypeError } from '../../engine/errors.js';
import { tokenEndpointCredentials } from '../credentials.js';
import { formOf, optional, required } from '../form.js';
import { TOKEN_PATH } from '../paths.js';
import { noStore } from '../reply.js';
import type { RouteDeps } from '../types.js';

/** Spec 4.1: POST /oauth/token with grant_type=refresh_token (RFC 6749 §6); answers spec 2.1. */
export function tokenRoute(app: FastifyInstance, { engine }: RouteDeps): void {
  app.post(TOKEN_PATH, async (request, reply) => {
    const form = formOf(request);
    const grantType = form.grant_type;
    if (grantType === undefined || grantType === '') throw new InvalidRequestError('The parameter grant_type is missing', 'grant_type');
    if (grantType !== 'refresh_token') throw new UnsupportedGrantTypeError(grantType);
    const refreshToken = required(form, 'refresh_token');
    const scope = optional(form, 'scope');
    const client = await engine.authenticate(tokenEndpointCredentials(request, form));
    request.clientId = client.id;
    const response = await engine.refresh({ client, refreshToken, scope });
    request.jti = response.jti;
    return noStore(reply).send(response);
  });
}
