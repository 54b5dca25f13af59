import type { Socket } from 'node:net';
import { TLSSocket } from 'node:tls';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ConnectionError } from 'fastify';
import { ServiceUnavailableError } from '../engine/errors.js';
import { rawAnswer, reportAnswer, reporting, writeAnswer, type AnswerReporter } from './answer.js';
import { errorAnswer, pathOfUrl } from './error-answer.js';
import { MalformedRequestError } from './transport-errors.js';

/**
 * What Node's 'clientError' event hands over. Its `rawPacket` (a Buffer, whatever fastify's type
 * says) holds the raw request, Authorization header and body included: never log it.
 */
type ClientError = Omit<ConnectionError, 'rawPacket'> & {
  rawPacket?: unknown;
  /** llhttp's reason, a fixed text such as "Invalid character in Content-Length". */
  reason?: unknown;
};

export interface RefusalOptions {
  reporter: AnswerReporter;
  /** The request id, from the counter fastify's own requests use too. */
  nextId: () => string;
}

/** The end of a request line: the version after a space (searched line by line, so linear). */
const VERSION_AT_END = / HTTP\/\d\.\d\r?$/;
const TARGET = /^\/[\x21-\x7e]{0,2047}$/;
/** A method, at the end of the word before the target (a pipelined request may follow a body). */
const METHOD_AT_END = /[A-Z]{1,20}$/;

/** The start of the request that failed, as far as it is known. */
interface RequestStart {
  method: string | undefined;
  target: string;
}

/** What a socket holds of the answer Node is writing on it (Node's own `_httpMessage`). */
interface InFlight {
  headersSent: boolean;
  writableFinished: boolean;
  req?: { complete: boolean; method?: string; url?: string };
  once(event: 'finish', listener: () => void): unknown;
}

/**
 * Answers the requests Node's HTTP parser refuses before any route exists (a bad Content-Length,
 * Content-Length with Transfer-Encoding, a CR in a header, headers past the limit, a request not
 * finished within the request timeout): the `clientErrorHandler` of fastify, in place of its
 * default answer. The answer is the one `error-answer.ts` gives any malformed request (contract 3): the
 * RFC 6749 record when the request line names /oauth/token, spec 7.2's otherwise, with
 * `Cache-Control: no-store` and `Pragma: no-cache`; and the connection is closed after it, since
 * the rest of the stream cannot be trusted. The raw bytes (which may hold a secret or a token) are
 * read only for the request line, and never logged.
 */
export function createParserRefusals(options: RefusalOptions): (err: ConnectionError, socket: Socket) => void {
  /** Sockets whose refusal waits for the answer to an earlier, pipelined request. */
  const waiting = new WeakSet<Socket>();

  function answer(err: ClientError, socket: Socket, line: RequestStart | null): void {
    if (socket.destroyed || socket.writableEnded) return;
    if (!socket.writable) {
      socket.destroy();
      return;
    }
    const status = statusOf(err.code);
    const path = line ? pathOfUrl(line.target) : '';
    const a = errorAnswer(new MalformedRequestError(status, messageOf(status, err)), path);
    if (reporting(options.reporter)) {
      const x = { reqId: options.nextId(), method: line?.method, path, ip: socket.remoteAddress, answer: a, clientId: null, jti: null, outcome: null, ms: null };
      reportAnswer(options.reporter, { ...x, ...(err.code !== undefined && { parseError: err.code }) });
    }
    // Closed once the answer is handed to the kernel; whatever the parser did not read is dropped.
    socket.end(rawAnswer(a));
    socket.once('finish', () => socket.destroy());
  }

  return function onClientError(err: ClientError, socket) {
    // A TLS error, or a handshake not finished (timed out): there is no HTTP to answer in, and a
    // write in clear text would never finish and hold the socket. Closed at once.
    if (notSecureYet(err, socket)) {
      socket.destroy();
      return;
    }
    // A reset connection is gone. Once answered (or about to be), the parser repeats its error
    // for every further chunk: the first answer stands.
    if (err.code === 'ECONNRESET' || socket.destroyed || socket.writableEnded || waiting.has(socket)) return;
    const inFlight = (socket as Socket & { _httpMessage?: InFlight | null })._httpMessage;
    if (inFlight && !inFlight.writableFinished) {
      if (inFlight.req?.complete) {
        // A bad request pipelined behind good ones: their answers first, each in turn (Node hands
        // the socket to the next queued answer when one finishes), then the refusal.
        waiting.add(socket);
        const line = requestLine(err);
        // Looked at on the next turn: Node assigns the next answer in its own 'finish' listener.
        const afterAnswers = (): void => {
          const next = (socket as Socket & { _httpMessage?: InFlight | null })._httpMessage;
          if (next && !next.writableFinished && !socket.destroyed) next.once('finish', () => setImmediate(afterAnswers));
          else answer(err, socket, line);
        };
        inFlight.once('finish', () => setImmediate(afterAnswers));
        return;
      }
      // The request in flight is the one that failed (its body ended short, or came too slowly):
      // answered unless its answer has begun, when all that can be done is to close.
      if (inFlight.headersSent) socket.destroy();
      else answer(err, socket, inFlight.req?.url === undefined ? requestLine(err) : { method: inFlight.req.method, target: inFlight.req.url });
      return;
    }
    answer(err, socket, requestLine(err));
  };
}

/** A TLS-layer error, or a TLS socket whose handshake has not completed (Node's own flag). */
function notSecureYet(err: ClientError, socket: Socket): boolean {
  if (typeof err.code === 'string' && /^ERR_(?:TLS|SSL)_/.test(err.code)) return true;
  return socket instanceof TLSSocket && (socket as TLSSocket & { _secureEstablished?: boolean })._secureEstablished === false;
}

/**
 * The request line of the request that failed, as far as it can be told: the last one starting at
 * or before the byte the parser stopped at (earlier ones in the same packet were pipelined before
 * it). It only chooses the record's shape and the path named in it and in the log.
 */
function requestLine(err: ClientError): RequestStart | null {
  if (!Buffer.isBuffer(err.rawPacket)) return null;
  const stop = typeof err.bytesParsed === 'number' && err.bytesParsed >= 0 ? err.bytesParsed : 0;
  const text = err.rawPacket.toString('latin1', 0, Math.min(err.rawPacket.length, stop + 2100));
  let found: RequestStart | null = null;
  // Line by line, each looked at once: a crafted packet cannot make this search quadratic.
  for (let start = 0; start <= stop && start < text.length; ) {
    const end = text.indexOf('\n', start);
    const line = text.slice(start, end === -1 ? text.length : end);
    const version = VERSION_AT_END.exec(line);
    if (version) {
      const words = line.slice(0, version.index).split(' ');
      const target = words[words.length - 1]!;
      if (TARGET.test(target)) found = { method: METHOD_AT_END.exec(words[words.length - 2] ?? '')?.[0], target };
    }
    if (end === -1) break;
    start = end + 1;
  }
  return found;
}

/** Node's own choice of status for each parser error (`socketOnError` in `_http_server.js`). */
function statusOf(code: string | undefined): number {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return 431;
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return 413;
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return 408;
    default:
      return 400;
  }
}

function messageOf(status: number, err: ClientError): string {
  if (status === 431) return 'The request headers are larger than the server accepts';
  if (status === 413) return 'The chunk extensions of the request body are too large';
  if (status === 408) return 'The request was not received in time';
  // llhttp's reasons are fixed texts, never an echo of the request.
  const reason = typeof err.reason === 'string' && err.reason.length <= 100 ? `: ${err.reason}` : '';
  return `The request is not valid HTTP/1.1${reason}`;
}

/**
 * The answers Node or fastify would otherwise write themselves, bare (no error record, no
 * `no-store`), to requests they parsed but will not route: an `Expect` other than 100-continue
 * (417, RFC 9110 §10.1.1), an HTTP/1.1 request without `Host` (400, RFC 9112 §3.2), and a request
 * that arrives on an open connection once the server is closing (503: fastify's own answer has
 * neither). The same record and headers as every other refusal, one request log line, and the
 * connection closed.
 */
export function createRefusal(options: RefusalOptions): (req: IncomingMessage, res: ServerResponse, status: 400 | 417 | 503) => void {
  return (req, res, status) => {
    const path = pathOfUrl(req.url ?? '');
    const a = errorAnswer(refusalOf(status), path);
    writeAnswer(res, a, true);
    // The body, if any, is not read: the connection closes after the answer.
    req.resume();
    if (reporting(options.reporter)) {
      reportAnswer(options.reporter, { reqId: options.nextId(), method: req.method, path, ip: req.socket.remoteAddress, answer: a, clientId: null, jti: null, outcome: null, ms: null });
    }
  };
}

function refusalOf(status: 400 | 417 | 503): Error {
  if (status === 503) return new ServiceUnavailableError('The server is shutting down; send the request again, on a new connection');
  if (status === 417) return new MalformedRequestError(417, 'The Expect header is not supported: only 100-continue is');
  return new MalformedRequestError(400, 'The request has no Host header (RFC 9112 section 3.2), which is required since HTTP/1.1');
}
