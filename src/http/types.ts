import type { Engine } from '../engine/engine.js';
import type { Answered } from './endpoints/endpoint.js';

/** What the answer writer learns of a request fastify answered: never a token or a secret. */
declare module 'fastify' {
  interface FastifyRequest {
    /** The answer and what the log line and the observer learn beside it; null until answered. */
    answered: Answered | null;
  }
}

/** What every route is registered with. */
export interface RouteDeps {
  engine: Engine;
}
