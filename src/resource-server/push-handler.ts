import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SetRejected } from './set-receiver.js';

export interface PushHandlerOptions {
  /** The `Authorization` value the transmitter must send; checked before any byte of the body is read. */
  authorization: string | undefined;
  /** A body longer than this is refused with 413 and the connection closed. */
  maxBytes: number;
  /** The whole body must have arrived within this (ms), or 408 and the connection closed. */
  bodyTimeoutMs: number;
  /** Pushes read at once; past it 503 with Retry-After (the transmitter retries). */
  maxConcurrent: number;
  /** Verifies and applies one SET; rejects with {@link SetRejected} for a SET never to be accepted. */
  receive(jws: string): Promise<void>;
  onError(error: Error): void;
}

/**
 * RFC 8935 push, with the memory and time one request may take bounded: the endpoint is reachable
 * by anyone who can reach the API, before any SET is verified. tokenctl's deliverer sends one SET
 * at a time per receiver, so a few pushes at once are plenty.
 */
export function createPushHandler(options: PushHandlerOptions): (req: IncomingMessage, res: ServerResponse) => void {
  let reading = 0;
  return (req, res) => {
    const answer = (status: number, body?: object, headers: Record<string, string> = {}) => {
      if (res.headersSent) return;
      res.writeHead(status, { ...headers, ...(body ? { 'content-type': 'application/json' } : {}) });
      res.end(body ? JSON.stringify(body) : undefined);
    };
    // Answers and closes the connection without reading the rest of the body (RFC 9110 §15.5.14).
    const refuse = (status: number, body: object) => {
      answer(status, body, { connection: 'close' });
      req.socket.destroySoon?.();
      req.resume();
    };
    if (options.authorization !== undefined && !sameSecret(req.headers.authorization, options.authorization)) {
      return refuse(401, { err: 'authentication_failed', description: 'wrong or missing Authorization' });
    }
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > options.maxBytes) return refuse(413, { err: 'invalid_request', description: `a SET is at most ${options.maxBytes} bytes` });
    if (reading >= options.maxConcurrent) return answer(503, undefined, { 'retry-after': '1' });
    reading++;
    let done = false;
    const finish = () => {
      if (done) return false;
      done = true;
      reading--;
      clearTimeout(timer);
      return true;
    };
    const timer = setTimeout(() => {
      if (finish()) refuse(408, { err: 'invalid_request', description: 'the SET did not arrive in time' });
    }, options.bodyTimeoutMs);
    const chunks: Buffer[] = [];
    let length = 0;
    req.on('data', (chunk: Buffer) => {
      if (done) return;
      length += chunk.length;
      if (length > options.maxBytes) {
        finish();
        chunks.length = 0;
        refuse(413, { err: 'invalid_request', description: `a SET is at most ${options.maxBytes} bytes` });
      } else {
        chunks.push(chunk);
      }
    });
    req.on('error', () => finish());
    req.on('close', () => finish());
    req.on('end', () => {
      if (!finish()) return;
      options.receive(Buffer.concat(chunks).toString('utf8').trim()).then(
        () => answer(202),
        (error: unknown) => {
          options.onError(error instanceof Error ? error : new Error(String(error)));
          if (error instanceof SetRejected) answer(400, { err: error.err, description: error.message });
          else answer(503); // a key not fetched yet: the transmitter retries
        },
      );
    });
  };
}

/** Compares a presented credential with the expected one in constant time (of their digests, so lengths do not show either). */
function sameSecret(presented: string | undefined, expected: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return presented !== undefined && timingSafeEqual(digest(presented), digest(expected));
}
