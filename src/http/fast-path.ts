import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { FastifyBaseLogger } from 'fastify';
import type { Engine } from '../engine/engine.js';
import { errorAnswer } from './errors.js';
import { BODY_LIMIT, FORM_MEDIA_TYPE, formBodyParser, type Form } from './form.js';
import { INTROSPECTION_PATH, REVOCATION_PATH, TOKEN_PATH } from './paths.js';
import { introspection } from './routes/introspection.js';
import { revocation } from './routes/revocation.js';
import { tokenGrant } from './routes/token.js';
import type { StoreFaults } from './store-faults.js';
import type { RequestNote } from './types.js';

/** One of the three endpoints, as both the fastify routes and this path call it. */
type Endpoint = (engine: Engine, form: Form, authorization: string | undefined, note: RequestNote) => Promise<unknown>;

const ENDPOINTS: ReadonlyMap<string, Endpoint> = new Map<string, Endpoint>([
  [TOKEN_PATH, tokenGrant],
  [REVOCATION_PATH, revocation],
  [INTROSPECTION_PATH, introspection],
]);

/** The form media type bare, or with the UTF-8 charset parameter that browsers and fetch add. */
const PLAIN_FORM_TYPE = /^application\/x-www-form-urlencoded(?:;[ ]?charset=utf-8)?$/i;
const JSON_TYPE = 'application/json; charset=utf-8';

export interface FastPathOptions {
  engine: Engine;
  /** The app's logger, read per request (fastify creates it after the server). */
  log: () => FastifyBaseLogger;
  /** Whether a line per request is logged (level info or finer). */
  logRequests: () => boolean;
  /** The request id, from the counter fastify's own requests use too. */
  nextId: () => string;
  /** Where storage faults are noted for /healthz, as fastify's routes note theirs. */
  storeFaults: StoreFaults;
}

/**
 * The three POST endpoints without fastify's per-request machinery, for the requests that make
 * up nearly all of a server's traffic: POST to exactly one of the three paths, a form body of a
 * declared length within the limit, not chunked. Returns false for any other request, before
 * reading anything, and fastify handles it with its own checks (415, 413, 405, chunked bodies,
 * shutting down). What is answered here is what the fastify routes answer: the same endpoint
 * functions, the same form parser, the same error records (`errors.ts`), the same headers and the
 * same request log line.
 */
export function createFastPath(options: FastPathOptions): (req: IncomingMessage, res: ServerResponse, listening: boolean) => boolean {
  const { engine } = options;

  function answer(req: IncomingMessage, res: ServerResponse, path: string, started: number, id: string, note: Note, status: number, extra: Record<string, string> | undefined, payload: string): void {
    const headers: string[] = [];
    if (extra) for (const name in extra) headers.push(name, extra[name]!);
    headers.push('cache-control', 'no-store', 'pragma', 'no-cache', 'content-type', JSON_TYPE, 'content-length', String(Buffer.byteLength(payload)));
    res.writeHead(status, headers);
    res.end(payload);
    if (options.logRequests()) {
      options.log().info(
        {
          reqId: id,
          method: 'POST',
          path,
          status,
          ms: Math.round((performance.now() - started) * 100) / 100,
          ip: req.socket.remoteAddress,
          ...(note.clientId !== null && { client_id: note.clientId }),
          ...(note.jti !== null && { jti: note.jti }),
          ...(note.errorCode !== null && { error: note.errorCode }),
        },
        'request',
      );
    }
  }

  async function respond(req: IncomingMessage, res: ServerResponse, path: string, endpoint: Endpoint, body: Buffer, started: number): Promise<void> {
    const id = options.nextId();
    const note: Note = { clientId: null, jti: null, errorCode: null, ip: req.socket.remoteAddress };
    let payload: string;
    try {
      const form = formBodyParser(req.headers['content-type'], body);
      payload = JSON.stringify(await endpoint(engine, form, req.headers.authorization, note));
    } catch (err) {
      options.storeFaults.note(err);
      const a = errorAnswer(err, path, req.headers.authorization);
      if (a.unexpected) options.log().error({ reqId: id, err }, 'unexpected error');
      note.errorCode = a.code;
      answer(req, res, path, started, id, note, a.status, a.headers, JSON.stringify(a.body));
      return;
    }
    answer(req, res, path, started, id, note, 200, undefined, payload);
  }

  return function fastPath(req, res, listening) {
    // A server that is closing leaves fastify to answer (503, Connection: close).
    if (req.method !== 'POST' || !listening) return false;
    const path = req.url!;
    const endpoint = ENDPOINTS.get(path);
    if (endpoint === undefined) return false;
    const headers = req.headers;
    const type = headers['content-type'];
    const length = Number(headers['content-length']);
    if (type === undefined || headers['transfer-encoding'] !== undefined || !(length > 0 && length <= BODY_LIMIT)) return false;
    if (type !== FORM_MEDIA_TYPE && !PLAIN_FORM_TYPE.test(type)) return false;

    const started = performance.now();
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      // Copied: the parser never works on a view of a buffer the socket may reuse.
      void respond(req, res, path, endpoint, Buffer.concat(chunks), started);
    });
    // An aborted request is answered to nobody; the socket is gone.
    req.on('error', () => undefined);
    return true;
  };
}

interface Note extends RequestNote {
  errorCode: string | null;
}
