import type { FastifyInstance } from 'fastify';
import { endpointCredentials } from '../credentials.js';
import { formOf, required, tokenTypeHint } from '../form.js';
import { INTROSPECTION_PATH } from '../paths.js';
import { noStore } from '../reply.js';
import type { RouteDeps } from '../types.js';

/** Spec 4.3 (RFC 7662): any authenticated client may introspect any token; answers spec 2.3. */
export function introspectionRoute(app: FastifyInstance, { engine }: RouteDeps): void {
  app.post(INTROSPECTION_PATH, async (request, reply) => {
    const form = formOf(request);
    const token = required(form, 'token');
    tokenTypeHint(form); // required and checked (contract 3), but only a hint
    const client = await engine.authenticate(endpointCredentials(request, form));
    request.clientId = client.id;
    const result = await engine.introspect(token);
    if (result.active) request.jti = result.jti;
    return noStore(reply).send(result);
  });
}
