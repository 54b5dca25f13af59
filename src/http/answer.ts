import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { FastifyBaseLogger, FastifyReply } from 'fastify';
import type { ClientAction } from '../engine/results.js';
import type { AnswerObserver, EndpointName } from './observer.js';
import { AUTHORIZE_CONTINUE_PATH, AUTHORIZE_PATH, DEV_LOGIN_PATH, HEALTH_PATH, INTROSPECTION_PATH, LIVE_PATH, LOGIN_REQUESTS_PATH, METADATA_PATH, READY_PATH, REVOCATION_PATH, TOKEN_PATH } from './paths.js';

/**
 * The one answer writer of the server: every answer, whichever door the request came through (the
 * fast path, fastify's routes and handlers, or Node's parser refusing it), is an {@link Answer}
 * written here, by {@link writeAnswer} on a node:http response, {@link replyAnswer} on a fastify
 * reply, or {@link rawAnswer} on a bare socket; and every answer is reported here once, by
 * {@link reportAnswer}: the request log line and the {@link AnswerObserver}.
 */
export interface Answer {
  status: number;
  /** Headers besides the no-store pair, Content-Type and Content-Length (Allow, WWW-Authenticate, Retry-After...). */
  headers: Record<string, string> | undefined;
  /** The JSON body: its text, or its bytes (UTF-8) when they were made as such. */
  payload: string | Buffer;
  /** Contract 3 (RFC 6749 §5.1): not to be cached. All but the metadata document. */
  noStore: boolean;
  /** The error code of a refusal (RFC 6749 §5.2 / RFC 7009 names), null for a success. */
  errorCode: string | null;
  /** Why, in a bounded vocabulary (see {@link AnswerRecord.reason}), when there is one. */
  reason: string | null;
}

export const JSON_TYPE = 'application/json; charset=utf-8';

/** A 200 with `body` as JSON, not to be cached. */
export function okAnswer(body: unknown): Answer {
  return okJsonAnswer(JSON.stringify(body));
}

/** A 200 with `json`, a JSON text (or its UTF-8 bytes) already made, not to be cached. */
export function okJsonAnswer(json: string | Buffer): Answer {
  return { status: 200, headers: undefined, payload: json, noStore: true, errorCode: null, reason: null };
}

/** Writes `a` on a node:http response; `close` ends the connection after it. */
export function writeAnswer(res: ServerResponse, a: Answer, close = false): void {
  const headers: string[] = [];
  if (a.headers) for (const name in a.headers) headers.push(name, a.headers[name]!);
  if (a.noStore) headers.push('cache-control', 'no-store', 'pragma', 'no-cache');
  headers.push('content-type', JSON_TYPE, 'content-length', String(Buffer.byteLength(a.payload)));
  if (close) {
    res.shouldKeepAlive = false;
    headers.push('connection', 'close');
  }
  res.writeHead(a.status, headers);
  res.end(a.payload);
}

/** Writes `a` through a fastify reply (which adds HEAD handling and its hooks). */
export function replyAnswer(reply: FastifyReply, a: Answer): FastifyReply {
  reply.code(a.status);
  if (a.headers) reply.headers(a.headers);
  if (a.noStore) reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
  return reply.type(JSON_TYPE).send(a.payload);
}

/** `a` as the bytes of an HTTP/1.1 answer that closes the connection, for a socket without a parser. */
export function rawAnswer(a: Answer): string {
  const head = [`HTTP/1.1 ${a.status} ${STATUS_CODES[a.status] ?? 'Error'}`];
  if (a.headers) for (const name in a.headers) head.push(`${name}: ${a.headers[name]!}`);
  if (a.noStore) head.push('Cache-Control: no-store', 'Pragma: no-cache');
  head.push(`Content-Type: ${JSON_TYPE}`, `Content-Length: ${Buffer.byteLength(a.payload)}`, `Date: ${new Date().toUTCString()}`, 'Connection: close');
  return head.join('\r\n') + '\r\n\r\n' + a.payload.toString();
}

/** Where answers are reported: the request log and the observer. One per server. */
export interface AnswerReporter {
  /** The app's logger, read per answer (fastify creates it after the server). */
  log: () => FastifyBaseLogger;
  /** Whether a line per request is logged (level info or finer). */
  logRequests: () => boolean;
  observer: AnswerObserver | undefined;
}

/** What the log line and the observer learn of one answered request. Never a token or a secret. */
export interface Exchange {
  reqId: string;
  /** Unknown when the parser refused the request before its method. */
  method: string | undefined;
  /** The path without its query, as the client sent it. */
  path: string;
  ip: string | undefined;
  answer: Pick<Answer, 'status' | 'errorCode' | 'reason'>;
  clientId: string | null;
  jti: string | null;
  outcome: ClientAction | null;
  /** From the request taken up to the answer written; null when unknown (a parser refusal). */
  ms: number | null;
  /** Node's parser error code, for a request it refused. */
  parseError?: string;
}

/** Whether {@link reportAnswer} has anything to do: an {@link Exchange} need not be built otherwise. */
export function reporting(r: AnswerReporter): boolean {
  return r.observer !== undefined || r.logRequests();
}

/**
 * Reports one answer: one request log line at info (method, path, status, time, client id, jti,
 * error code: never a token, a secret, a form parameter or a header), and one record to the observer.
 */
export function reportAnswer(r: AnswerReporter, x: Exchange): void {
  const { status, errorCode, reason } = x.answer;
  if (r.logRequests()) {
    r.log().info(
      {
        reqId: x.reqId,
        ...(x.method !== undefined && { method: x.method }),
        path: ENDPOINT_NAMES.has(x.path) ? x.path : loggedPath(x.path),
        status,
        ...(x.ms !== null && { ms: Math.round(x.ms * 100) / 100 }),
        ip: x.ip,
        ...(x.clientId !== null && { client_id: x.clientId }),
        ...(x.jti !== null && { jti: x.jti }),
        ...(errorCode !== null && { error: errorCode }),
        ...(x.parseError !== undefined && { parse_error: x.parseError }),
      },
      'request',
    );
  }
  r.observer?.({
    endpoint: ENDPOINT_NAMES.get(x.path) ?? 'other',
    status,
    errorCode,
    reason,
    clientId: x.clientId,
    outcome: x.outcome,
    durationMs: x.ms ?? 0,
  });
}

const ENDPOINT_NAMES: ReadonlyMap<string, EndpointName> = new Map<string, EndpointName>([
  [TOKEN_PATH, 'token'],
  [REVOCATION_PATH, 'revocation'],
  [INTROSPECTION_PATH, 'introspection'],
  [METADATA_PATH, 'metadata'],
  [LIVE_PATH, 'health'],
  [READY_PATH, 'health'],
  [HEALTH_PATH, 'health'],
  [AUTHORIZE_PATH, 'authorize'],
  [AUTHORIZE_CONTINUE_PATH, 'authorize'],
  [DEV_LOGIN_PATH, 'login'],
  // Route patterns: the challenge in the path is never logged.
  [`${LOGIN_REQUESTS_PATH}/:challenge`, 'login'],
  [`${LOGIN_REQUESTS_PATH}/:challenge/accept`, 'login'],
  [`${LOGIN_REQUESTS_PATH}/:challenge/reject`, 'login'],
]);

/** Access and refresh tokens, authorization codes (`tcc_`), and generated client passwords (`tcs_`). */
const TOKEN_LIKE = /tc[arsc]_[A-Za-z0-9_-]{20,}/g;

/** A path as the client sent it, made fit for the log: cut short, and any token in it masked. */
export function loggedPath(path: string): string {
  return (path.length > 200 ? path.slice(0, 200) + '…' : path).replace(TOKEN_LIKE, (t) => t.slice(0, 4) + '[redacted]');
}
