import type { FastifyReply, FastifyRequest } from 'fastify';
import { pathOf } from './errors.js';

/**
 * One log line per request, at info, written when the answer is sent: method, path (never the
 * query), status, time, and what the engine told us: the client id, the jti, the error code.
 * Never a token, a secret, a form parameter or a header: nothing here reads them.
 */
export async function logRequest(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  request.log.info(
    {
      reqId: request.id,
      method: request.method,
      path: request.routeOptions.url ?? unroutedPath(request),
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 100) / 100,
      ip: request.ip,
      ...(request.clientId !== null && { client_id: request.clientId }),
      ...(request.jti !== null && { jti: request.jti }),
      ...(request.errorCode !== null && { error: request.errorCode }),
    },
    'request',
  );
}

/** Access and refresh tokens, and generated client passwords (`tcs_`). */
const TOKEN_LIKE = /tc[ars]_[A-Za-z0-9_-]{20,}/g;

/** A path no route matched is whatever the client sent: cut short, and any token in it masked. */
function unroutedPath(request: FastifyRequest): string {
  return loggedPath(pathOf(request));
}

/** A path as the client sent it, made fit for the log: cut short, and any token in it masked. */
export function loggedPath(path: string): string {
  return (path.length > 200 ? path.slice(0, 200) + '…' : path).replace(TOKEN_LIKE, (t) => t.slice(0, 4) + '[redacted]');
}
