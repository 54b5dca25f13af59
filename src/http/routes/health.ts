import type { FastifyInstance } from 'fastify';
import { ServiceUnavailableError } from '../../engine/errors.js';
import { HEALTH_PATH } from '../paths.js';
import { noStore } from '../reply.js';
import type { RouteDeps } from '../types.js';

/** GET /healthz (contract 3): 200 when the store answers, else 503. */
export function healthRoute(app: FastifyInstance, { engine }: RouteDeps): void {
  app.route({
    method: ['GET', 'HEAD'],
    url: HEALTH_PATH,
    handler: async (_request, reply) => {
      try {
        await engine.store.ping();
      } catch (err) {
        throw new ServiceUnavailableError('The token store does not answer', { cause: err });
      }
      return noStore(reply).send({ status: 'ok' });
    },
  });
}
