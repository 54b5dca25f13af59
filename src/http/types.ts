import type { Engine } from '../engine/engine.js';

/** What the request log line carries besides method, path and status: never a token or secret. */
declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated client, once known. */
    clientId: string | null;
    /** The jti of the token the request produced or acted on, once known. */
    jti: string | null;
    /** The error code of a failed request (RFC 6749 §5.2 names). */
    errorCode: string | null;
  }
}

/** What every route is registered with. */
export interface RouteDeps {
  engine: Engine;
}

/** What an endpoint learns for the request log line (a FastifyRequest is one). */
export interface RequestNote {
  clientId: string | null;
  jti: string | null;
  /** The peer's address, for the engine's brute-force budgets (a FastifyRequest's `ip`). */
  readonly ip?: string;
}
