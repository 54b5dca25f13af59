import type { FastifyInstance } from 'fastify';
import { ServiceUnavailableError } from '../../engine/errors.js';
import { okAnswer, replyAnswer } from '../answer.js';
import type { HandlerDeps } from '../endpoints/endpoint.js';
import { HEALTH_PATH } from '../paths.js';

/** A grant id no token has (ids are UUIDs): revoking it is a write transaction that changes nothing. */
const NO_GRANT = 'tokenctl-healthz-write-check';
const OK = okAnswer({ status: 'ok' });

/**
 * GET /healthz (contract 3): 200 when the store answers a read and a write, else 503 with
 * Retry-After. The write revokes a grant that does not exist: it takes the store's write lock
 * (a read-only store, a lost connection, a failed disk refuse it) and changes nothing. A storage
 * fault that requests met in the last seconds (a full disk, which a write changing nothing does
 * not meet) is reported too.
 */
export function healthRoute(app: FastifyInstance, { engine, storeFaults }: HandlerDeps): void {
  app.route({
    method: ['GET', 'HEAD'],
    url: HEALTH_PATH,
    handler: async (_request, reply) => {
      try {
        await engine.store.ping();
        await engine.store.revokeGrant(NO_GRANT, Date.now(), {});
      } catch (err) {
        throw new ServiceUnavailableError('The token store cannot be read or written; try again shortly', { cause: err });
      }
      const fault = storeFaults.recent();
      if (fault !== null) throw new ServiceUnavailableError('The token store failed a request in the last seconds; try again shortly');
      return replyAnswer(reply, OK);
    },
  });
}
