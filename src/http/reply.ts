import type { FastifyReply } from 'fastify';

/** Contract 3 (RFC 6749 §5.1): every answer of the three endpoints is not to be cached. */
export function noStore(reply: FastifyReply): FastifyReply {
  return reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
}
