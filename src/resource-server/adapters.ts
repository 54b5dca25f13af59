import type { IncomingMessage, ServerResponse } from 'node:http';
import type { IntrospectionAnswer } from './cache.js';

/**
 * Bearer tokens in, RFC 6750 answers out, for Node's http, fastify and express. Duck-typed: the
 * module depends on neither framework (their types would pull them in; a request is something
 * with `headers`, a reply something with a status, headers and a body).
 */

/** Who a valid access token speaks for: what the resource server's handlers read. */
export interface Principal {
  /** The client the token was issued to. */
  clientId: string | undefined;
  /** The user who authorized it. */
  username: string | undefined;
  sub: string | undefined;
  /** Its scope, split on spaces. */
  scopes: string[];
  /** When it expires (seconds since the epoch). */
  exp: number | undefined;
  jti: string | undefined;
  /** The whole introspection answer (spec 2.3). */
  answer: IntrospectionAnswer;
}

/** The result of checking one request: a principal, or the RFC 6750 §3 answer to send. */
export type Check = { ok: true; principal: Principal } | { ok: false; refusal: Refusal };

export interface Refusal {
  status: 400 | 401 | 403 | 503;
  /** The `WWW-Authenticate` value (absent for 503). */
  challenge: string | undefined;
  body: { error: string; error_description: string } | undefined;
}

export interface HeadersLike {
  headers: Record<string, string | string[] | undefined>;
}

/** The b64token of an `Authorization: Bearer` header (RFC 6750 §2.1); null when absent, false when malformed. */
export function bearerToken(req: HeadersLike): string | null | false {
  const header = req.headers['authorization'];
  if (header === undefined) return null;
  if (typeof header !== 'string') return false;
  const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(header);
  if (!match) return /^Bearer(\s|$)/i.test(header) ? false : null;
  return match[1]!;
}

/** RFC 6750 §3: the answer for a request without a valid token, or whose token lacks `scopes`. */
export function refusal(kind: 'missing' | 'malformed' | 'invalid' | 'insufficient_scope' | 'unavailable', realm: string | undefined, scopes: readonly string[] = []): Refusal {
  const params = realm !== undefined ? [`realm="${realm}"`] : [];
  const challenge = (error?: string, description?: string, scope?: string) =>
    'Bearer' +
    (params.length + (error ? 1 : 0) > 0 ? ' ' : '') +
    [...params, ...(error ? [`error="${error}"`, `error_description="${description}"`] : []), ...(scope ? [`scope="${scope}"`] : [])].join(', ');
  switch (kind) {
    case 'missing':
      return { status: 401, challenge: challenge(), body: undefined };
    case 'malformed':
      return { status: 400, challenge: challenge('invalid_request', 'malformed Authorization header'), body: { error: 'invalid_request', error_description: 'malformed Authorization header' } };
    case 'invalid':
      return { status: 401, challenge: challenge('invalid_token', 'the access token is not active'), body: { error: 'invalid_token', error_description: 'the access token is not active' } };
    case 'insufficient_scope':
      return {
        status: 403,
        challenge: challenge('insufficient_scope', 'the access token lacks a required scope', scopes.join(' ')),
        body: { error: 'insufficient_scope', error_description: 'the access token lacks a required scope' },
      };
    case 'unavailable':
      return { status: 503, challenge: undefined, body: { error: 'temporarily_unavailable', error_description: 'the token could not be checked' } };
  }
}

/** Writes a refusal on a Node response (also express's, which is one). */
export function writeRefusal(res: ServerResponse, r: Refusal): void {
  const headers: Record<string, string> = { 'cache-control': 'no-store' };
  if (r.challenge !== undefined) headers['www-authenticate'] = r.challenge;
  if (r.status === 503) headers['retry-after'] = '1';
  if (r.body) headers['content-type'] = 'application/json';
  res.writeHead(r.status, headers);
  res.end(r.body ? JSON.stringify(r.body) : undefined);
}

/** What {@link ResourceServer.check} needs of a request. */
export type Checker = (req: HeadersLike, scopes?: readonly string[]) => Promise<Check>;

/** The part of a fastify reply the hook uses. */
export interface FastifyReplyLike {
  code(status: number): FastifyReplyLike;
  header(name: string, value: string): FastifyReplyLike;
  send(body?: unknown): unknown;
}

/**
 * A fastify `onRequest`/`preHandler` hook: `app.addHook('onRequest', rs.fastify())`, or per route
 * `{ onRequest: rs.fastify({ scopes: ['read'] }) }`. Sets `request.principal`.
 */
export function fastifyHook(check: Checker, scopes: readonly string[] = []) {
  return async (request: HeadersLike & { principal?: Principal }, reply: FastifyReplyLike): Promise<void> => {
    const result = await check(request, scopes);
    if (result.ok) {
      request.principal = result.principal;
      return;
    }
    const r = result.refusal;
    reply.code(r.status).header('cache-control', 'no-store');
    if (r.challenge !== undefined) reply.header('www-authenticate', r.challenge);
    if (r.status === 503) reply.header('retry-after', '1');
    await reply.send(r.body ?? '');
  };
}

/**
 * An express middleware: `app.use(rs.express())`, or per route `app.get('/x', rs.express({ scopes: ['read'] }), …)`.
 * Sets `req.principal` and `res.locals.principal`.
 */
export function expressMiddleware(check: Checker, scopes: readonly string[] = []) {
  return (req: IncomingMessage & { principal?: Principal }, res: ServerResponse & { locals?: Record<string, unknown> }, next: (error?: unknown) => void): void => {
    check(req as HeadersLike, scopes).then((result) => {
      if (!result.ok) return writeRefusal(res, result.refusal);
      req.principal = result.principal;
      if (res.locals) res.locals['principal'] = result.principal;
      next();
    }, next);
  };
}
