import { STATUS_CODES } from 'node:http';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { CodeReplayedError, engineErrorName, InvalidClientError, InvalidTokenError, RefreshLimitError, ReuseDetectedError, TooManyAttemptsError, type EngineErrorName, type EngineErrorOf } from '../engine/errors.js';
import { StoreUnavailableError } from '../store/store.js';
import { replyAnswer, type Answer } from './answer.js';
import type { ClientAction } from '../engine/results.js';
import { HttpTransportError, MethodNotAllowedError, RouteNotFoundError } from './transport-errors.js';
import { ALLOWED_METHODS, LOGIN_REQUESTS_PATH, TOKEN_PATH } from './paths.js';

/**
 * The one place where errors become answers (contract 3, spec part 7); `answer.ts` writes them.
 *
 * Every error is first classified into a status, an RFC 6749 §5.2 code and a message, then
 * written in the shape of the endpoint that failed:
 * - POST /oauth/token: the RFC 6749 record `{error, error_description}` (spec 7.1);
 * - everything else: the record of spec 7.2,
 *   `{timestamp: "<ms>", status, error: "<reason phrase>", message, path}`.
 * Anything unexpected is a 500 with no detail; it is logged here, never echoed.
 */
interface Classified {
  status: number;
  /** RFC 6749 §5.2 / RFC 7009 error code, for the token endpoint's record and the logs. */
  code: string;
  message: string;
  headers?: Record<string, string>;
}

/** Seconds a client should wait before retrying a 503. */
const RETRY_AFTER = '2';
const INTERNAL = 'The server failed to handle the request; the error has been logged';

/** How one of the engine's errors is answered. */
interface EngineErrorAnswer<E> {
  status: number;
  /** The RFC 6749 §5.2 code answered; default the error's own `code`. */
  code?: string;
  /**
   * RFC 6749 §5.2: a 401 for failed client authentication names the Basic scheme. Contract 3:
   * only when the request carried an Authorization header; a client that sent
   * its credentials in the form gets none, because strict clients (oauth4webapi, openid-client)
   * read a challenge as "retry with Basic" and never show the body.
   */
  challenge?: true;
  headers?: (err: E) => Record<string, string>;
}

/**
 * Every error of the engine (`engine/errors.ts`) as an answer: a table over ENGINE_ERRORS, so that
 * a new error without its row does not compile (and is never a silent 400).
 */
const ENGINE_ERROR_ANSWERS = {
  InvalidRequestError: { status: 400 },
  UnsupportedGrantTypeError: { status: 400 },
  UnauthorizedClientError: { status: 400 },
  UnsupportedTokenTypeError: { status: 400 },
  InvalidScopeError: { status: 400 },
  // RFC 6749 §5.2: a code that cannot be exchanged.
  InvalidGrantError: { status: 400 },
  CodeReplayedError: { status: 400 },
  // RFC 9449 §5: a token request whose proof does not hold; §8: one without the current nonce, told it.
  InvalidDpopProofError: { status: 400 },
  UseDpopNonceError: { status: 400, headers: (err) => ({ 'dpop-nonce': err.nonce }) },
  // The login app's back channel (contract 5): a challenge unknown or expired, or answered already.
  LoginRequestNotFoundError: { status: 404 },
  LoginRequestAnsweredError: { status: 409 },
  InvalidInputError: { status: 400, code: 'invalid_request' },
  InvalidClientError: { status: 401, challenge: true },
  // Spec 7.1: 401 invalid_token (not RFC 6749's 400 invalid_grant); no challenge, it is not client authentication.
  InvalidTokenError: { status: 401 },
  ReuseDetectedError: { status: 401 },
  // RFC 8935 §2.4: the client is not the poll receiver's.
  AccessDeniedError: { status: 403 },
  // Brute-force budget (RFC 6749 §2.3.1): refused before any hash; retry when the budget allows.
  TooManyAttemptsError: { status: 429, headers: (err) => ({ 'retry-after': String(err.retryAfterSeconds) }) },
  // A refresh token past its refreshes per minute: nothing was minted.
  RefreshLimitError: { status: 429, headers: (err) => ({ 'retry-after': String(err.retryAfterSeconds) }) },
  ServiceUnavailableError: { status: 503, headers: () => ({ 'retry-after': RETRY_AFTER }) },
  // The operator's errors, which the endpoints never meet: a refusal with the message as it is.
  NotFoundError: { status: 400, code: 'invalid_request' },
  PartialBulkRevocationError: { status: 400, code: 'invalid_request' },
} satisfies { [N in EngineErrorName]: EngineErrorAnswer<EngineErrorOf<N>> };

function classify(err: unknown, authorization: string | undefined): Classified | null {
  const name = engineErrorName(err);
  if (name !== null) {
    const e = err as EngineErrorOf<typeof name>;
    const row = ENGINE_ERROR_ANSWERS[name] as EngineErrorAnswer<typeof e>;
    const headers = row.challenge && authorization !== undefined ? CHALLENGE : row.headers?.(e);
    return { status: row.status, code: row.code ?? e.code, message: e.message, headers };
  }
  if (err instanceof StoreUnavailableError) {
    return { status: 503, code: 'temporarily_unavailable', message: 'The token store is unavailable; try again shortly', headers: { 'retry-after': RETRY_AFTER } };
  }
  if (err instanceof MethodNotAllowedError) return { status: 405, code: 'invalid_request', message: err.message, headers: { allow: err.allow } };
  if (err instanceof HttpTransportError) return { status: err.status, code: err.status === 404 ? 'not_found' : 'invalid_request', message: err.message };
  // The client closed the connection before its body was complete (Node's 'aborted'): nobody
  // will read the answer, and nothing unexpected happened.
  if (err instanceof Error && err.message === 'aborted' && (err as NodeJS.ErrnoException).code === 'ECONNRESET') {
    return { status: 400, code: 'invalid_request', message: 'The request body was not received: the client closed the connection' };
  }
  return classifyFastify(err as FastifyError);
}

const CHALLENGE = { 'www-authenticate': 'Basic realm="tokenctl"' };

/** fastify's own 4xx errors (body too large, bad Content-Length, media type, bad URL...). */
function classifyFastify(err: FastifyError): Classified | null {
  const status = err?.statusCode;
  if (typeof status !== 'number' || status < 400 || status > 499 || typeof err.code !== 'string' || !err.code.startsWith('FST_')) {
    return null;
  }
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 413, code: 'invalid_request', message: 'The request body is larger than 16 KiB' };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { status: 415, code: 'invalid_request', message: 'The request body must be application/x-www-form-urlencoded' };
    default:
      return { status, code: 'invalid_request', message: STATUS_CODES[status] ?? 'Bad request' };
  }
}

/** The path of a request without its query (which is never echoed: it could hold anything). */
export function pathOf(request: { url: string }): string {
  return pathOfUrl(request.url);
}

export function pathOfUrl(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

/** An error's answer, and whether the error was one of ours. */
export interface ErrorAnswer extends Answer {
  errorCode: string;
  /** True when the error was not one of ours: log it (with its detail), never echo it. */
  unexpected: boolean;
}

/**
 * What `err` becomes as the answer to a request for `path`: the one mapping of the server.
 * `authorization` is the request's Authorization header: the Basic challenge of a 401
 * invalid_client goes only with a request that carried one (contract 3).
 */
export function errorAnswer(err: unknown, path: string, authorization?: string): ErrorAnswer {
  const classified = classify(err, authorization);
  const unexpected = classified === null;
  const c = classified ?? { status: 500, code: 'server_error', message: INTERNAL };
  const body =
    path === TOKEN_PATH || path.startsWith(LOGIN_REQUESTS_PATH + '/')
      ? { error: c.code, error_description: c.message }
      : { timestamp: String(Date.now()), status: c.status, error: STATUS_CODES[c.status] ?? 'Error', message: c.message, path };
  return { status: c.status, headers: c.headers, payload: JSON.stringify(body), noStore: true, errorCode: c.code, reason: reasonOf(err), unexpected };
}

/**
 * Why, in a bounded vocabulary, for the observer: an invalid token's reason, a failed client
 * authentication's, or a budget's refusal. Null for any other error.
 */
function reasonOf(err: unknown): string | null {
  if (err instanceof InvalidTokenError || err instanceof InvalidClientError) return err.reason;
  if (err instanceof TooManyAttemptsError) return 'rate_limited';
  if (err instanceof RefreshLimitError) return 'refresh_limited';
  return null;
}

/** What the engine did before it refused a request, when it did something: a reuse caught, its grant revoked. */
export function failureOutcome(err: unknown): ClientAction | null {
  if (err instanceof ReuseDetectedError) return { kind: 'reuse_detected', tokens: err.grantTokens };
  if (err instanceof CodeReplayedError) return { kind: 'code_replayed', tokens: err.grantTokens };
  return null;
}

/** Writes `err` as the answer to `request` through fastify (its error and not-found handlers). */
export function sendError(err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const a = errorAnswer(err, pathOf(request), request.headers.authorization);
  if (a.unexpected) request.log.error({ reqId: request.id, err }, 'unexpected error');
  request.answered = { answer: a, clientId: null, jti: null, outcome: failureOutcome(err) };
  return replyAnswer(reply, a);
}

/** Installs the error and not-found handlers on the app. */
export function installErrorHandlers(app: FastifyInstance): void {
  app.setErrorHandler((err, request, reply) => sendError(err, request, reply));
  app.setNotFoundHandler((request, reply) => {
    // fastify routes a known path with another method here: contract 3 wants 405 and `Allow`.
    const path = pathOf(request);
    const allow = ALLOWED_METHODS.get(path);
    return sendError(allow ? new MethodNotAllowedError(request.method, allow) : new RouteNotFoundError(request.method, path), request, reply);
  });
}
