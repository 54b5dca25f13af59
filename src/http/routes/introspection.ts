import type { FastifyInstance } from 'fastify';
import type { Engine } from '../../engine/engine.js';
import type { IntrospectionResult } from '../../engine/results.js';
import { endpointCredentials } from '../credentials.js';
import { formOf, required, tokenTypeHint, type Form } from '../form.js';
import { INTROSPECTION_PATH } from '../paths.js';
import { noStore } from '../reply.js';
import type { RequestNote, RouteDeps } from '../types.js';

/** Spec 4.3 (RFC 7662): any authenticated client may introspect any token; answers spec 2.3. */
export async function introspection(engine: Engine, form: Form, authorization: string | undefined, note: RequestNote): Promise<IntrospectionResult> {
  const token = required(form, 'token');
  tokenTypeHint(form); // optional and checked (contract 3), but only a hint: the token is found whatever its type
  const authenticated = await engine.authenticateWithToken(endpointCredentials(authorization, form), token, note.ip);
  note.clientId = authenticated.client.id;
  const result = engine.introspectAuthenticated(authenticated);
  if (result.active) note.jti = result.jti;
  return result;
}

export function introspectionRoute(app: FastifyInstance, { engine }: RouteDeps): void {
  app.post(INTROSPECTION_PATH, async (request, reply) => {
    const result = await introspection(engine, formOf(request), request.headers.authorization, request);
    return noStore(reply).send(result);
  });
}
