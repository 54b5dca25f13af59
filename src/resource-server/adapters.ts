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
  /** The thumbprint of the key the token is bound to (RFC 9449 §6: its `cnf.jkt`), whose proof came with this request. */
  jkt?: string;
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
  /** What a DPoP proof's `htm` and `htu` are checked against (Node's http, fastify and express have them). */
  method?: string;
  url?: string;
  /** express: the URL before a mount point stripped its prefix from `url`. */
  originalUrl?: string;
}

/** The scheme and token of an `Authorization` header: `Bearer` (RFC 6750 §2.1) or `DPoP` (RFC 9449 §7.1). */
export interface PresentedToken {
  scheme: 'Bearer' | 'DPoP';
  token: string;
}

/**
 * The token of an `Authorization: Bearer` or (when `dpop`) `Authorization: DPoP` header; null when
 * there is none of these schemes, false when the header is malformed.
 */
export function presentedToken(req: HeadersLike, dpop: boolean): PresentedToken | null | false {
  const header = req.headers['authorization'];
  if (header === undefined) return null;
  if (typeof header !== 'string') return false;
  // Auth schemes are case-insensitive (RFC 9110 §11.1).
  const named = /^(Bearer|DPoP)(\s|$)/i.exec(header);
  if (!named) return null;
  const scheme = named[1]!.toLowerCase() === 'bearer' ? 'Bearer' : 'DPoP';
  if (scheme === 'DPoP' && !dpop) return null;
  const match = /^(?:Bearer|DPoP) +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(header);
  return match ? { scheme, token: match[1]! } : false;
}

/** The b64token of an `Authorization: Bearer` header (RFC 6750 §2.1); null when absent, false when malformed. */
export function bearerToken(req: HeadersLike): string | null | false {
  const presented = presentedToken(req, false);
  return presented ? presented.token : presented;
}

/** Why a request is refused: RFC 6750 §3's reasons, RFC 9449 §7.1's `invalid_dpop_proof`, or no answer from tokenctl. */
export type RefusalKind = 'missing' | 'malformed' | 'invalid' | 'invalid_dpop_proof' | 'insufficient_scope' | 'unavailable';

/** How the challenges are written: the scheme the request used (its challenge carries the error), and DPoP's algorithms when the API takes DPoP. */
export interface ChallengeOptions {
  scheme?: 'Bearer' | 'DPoP';
  /** DPoP is accepted with these algorithms (RFC 9449 §7.1 `algs`): a DPoP challenge is added. */
  dpopAlgorithms?: readonly string[];
  /** Replaces the default `error_description`. */
  description?: string;
}

const DESCRIPTIONS: Record<Exclude<RefusalKind, 'missing'>, string> = {
  malformed: 'malformed Authorization header',
  invalid: 'the access token is not active',
  invalid_dpop_proof: 'the DPoP proof is not valid',
  insufficient_scope: 'the access token lacks a required scope',
  unavailable: 'the token could not be checked',
};

/**
 * RFC 6750 §3 (and RFC 9449 §7.1 for DPoP): the answer for a request without a valid token, or
 * whose token lacks `scopes`. With DPoP accepted, a `Bearer` and a `DPoP` challenge, the scheme
 * the request used first and carrying the error.
 */
export function refusal(kind: RefusalKind, realm: string | undefined, scopes: readonly string[] = [], options: ChallengeOptions = {}): Refusal {
  const scheme = options.scheme ?? 'Bearer';
  const description = kind === 'missing' ? undefined : (options.description ?? DESCRIPTIONS[kind]);
  const error = kind === 'missing' || kind === 'unavailable' ? undefined : kind === 'malformed' ? 'invalid_request' : kind === 'invalid' ? 'invalid_token' : kind;
  const one = (name: 'Bearer' | 'DPoP'): string => {
    const params = realm !== undefined ? [`realm="${realm}"`] : [];
    if (name === scheme && error) params.push(`error="${error}"`, `error_description="${description}"`);
    if (name === scheme && kind === 'insufficient_scope' && scopes.length > 0) params.push(`scope="${scopes.join(' ')}"`);
    if (name === 'DPoP') params.push(`algs="${options.dpopAlgorithms!.join(' ')}"`);
    return params.length > 0 ? `${name} ${params.join(', ')}` : name;
  };
  const names: ('Bearer' | 'DPoP')[] = options.dpopAlgorithms === undefined ? ['Bearer'] : scheme === 'DPoP' ? ['DPoP', 'Bearer'] : ['Bearer', 'DPoP'];
  const challenge = names.map(one).join(', ');
  const body = error ? { error, error_description: description! } : undefined;
  switch (kind) {
    case 'missing':
      return { status: 401, challenge, body: undefined };
    case 'malformed':
      return { status: 400, challenge, body };
    case 'invalid':
    case 'invalid_dpop_proof':
      return { status: 401, challenge, body };
    case 'insufficient_scope':
      return { status: 403, challenge, body };
    case 'unavailable':
      return { status: 503, challenge: undefined, body: { error: 'temporarily_unavailable', error_description: description! } };
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
