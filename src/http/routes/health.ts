import type { FastifyInstance } from 'fastify';
import { ServiceUnavailableError } from '../../engine/errors.js';
import { okAnswer, replyAnswer } from '../answer.js';
import { HEALTH_PATH, LIVE_PATH, READY_PATH } from '../paths.js';
import type { Readiness } from '../readiness.js';

const OK = okAnswer({ status: 'ok' });

const NOT_READY = {
  draining: 'The node is shutting down; send requests to another node',
  store_unavailable: 'The token store did not answer a read in time; try again shortly',
} as const;

/**
 * The health routes (contract 6). `/health/live`: the process answers, without touching the
 * store, so that a liveness probe never restarts a node for a database outage it cannot mend.
 * `/health/ready` (and `/healthz`, its older name): the store answers a read within the request
 * timeout and the node is not draining; asked anew at each probe, never writing.
 */
export function healthRoutes(app: FastifyInstance, readiness: Readiness): void {
  app.route({ method: ['GET', 'HEAD'], url: LIVE_PATH, handler: async (_request, reply) => replyAnswer(reply, OK) });
  for (const url of [READY_PATH, HEALTH_PATH]) {
    app.route({
      method: ['GET', 'HEAD'],
      url,
      handler: async (_request, reply) => {
        const notReady = await readiness.check();
        if (notReady !== null) throw new ServiceUnavailableError(NOT_READY[notReady]);
        return replyAnswer(reply, OK);
      },
    });
  }
}
