import type { FastifyInstance } from 'fastify';
import type { Engine } from '../../engine/engine.js';
import type { RevocationResult } from '../../engine/results.js';
import { endpointCredentials } from '../credentials.js';
import { formOf, required, tokenTypeHint, type Form } from '../form.js';
import { REVOCATION_PATH } from '../paths.js';
import { noStore } from '../reply.js';
import type { RequestNote, RouteDeps } from '../types.js';

/** Spec 4.2 (RFC 7009): a client revokes one of its own tokens; answers spec 2.2. */
export async function revocation(engine: Engine, form: Form, authorization: string | undefined, note: RequestNote): Promise<RevocationResult> {
  const token = required(form, 'token');
  tokenTypeHint(form); // optional and checked (contract 3), but only a hint: the token is found whatever its type
  const authenticated = await engine.authenticateWithToken(endpointCredentials(authorization, form), token, note.ip);
  note.clientId = authenticated.client.id;
  const { result, jti } = await engine.revokeAuthenticated(authenticated);
  // The log line carries the jti the engine acted on; the answer is the spec 2.2 record alone.
  note.jti = jti;
  return result;
}

export function revocationRoute(app: FastifyInstance, { engine }: RouteDeps): void {
  app.post(REVOCATION_PATH, async (request, reply) => {
    const result = await revocation(engine, formOf(request), request.headers.authorization, request);
    return noStore(reply).send(result);
  });
}
