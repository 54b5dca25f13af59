import type { FastifyInstance } from 'fastify';
import { endpointCredentials } from '../credentials.js';
import { formOf, required, tokenTypeHint } from '../form.js';
import { REVOCATION_PATH } from '../paths.js';
import { noStore } from '../reply.js';
import type { RouteDeps } from '../types.js';

const JTI_IN_MESSAGE = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;

/** Spec 4.2 (RFC 7009): a client revokes one of its own tokens; answers spec 2.2. */
export function revocationRoute(app: FastifyInstance, { engine }: RouteDeps): void {
  app.post(REVOCATION_PATH, async (request, reply) => {
    const form = formOf(request);
    const token = required(form, 'token');
    tokenTypeHint(form); // required and checked (contract 3), but only a hint
    const client = await engine.authenticate(endpointCredentials(request, form));
    request.clientId = client.id;
    const result = await engine.revoke({ client, token });
    // Spec 2.2: the message names the jti; the log line carries it too.
    request.jti = JTI_IN_MESSAGE.exec(result.message)?.[0] ?? null;
    return noStore(reply).send(result);
  });
}
