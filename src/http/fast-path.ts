import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { reportAnswer, reporting, writeAnswer, type AnswerReporter } from './answer.js';
import { clientAddress, type TrustProxy } from './client-address.js';
import { handle, type Endpoint, type HandlerDeps } from './endpoints/endpoint.js';
import { ENDPOINTS } from './endpoints/index.js';
import { BODY_LIMIT, FORM_MEDIA_TYPE, formBodyParser } from './form.js';
import { EndpointRequest } from './request.js';

/** The form media type bare, or with the UTF-8 charset parameter that browsers and fetch add. */
const PLAIN_FORM_TYPE = /^application\/x-www-form-urlencoded(?:;[ ]?charset=utf-8)?$/i;

export interface FastPathOptions extends HandlerDeps {
  reporter: AnswerReporter;
  /** The request id, from the counter fastify's own requests use too. */
  nextId: () => string;
  /** The proxies trusted to name the client, as fastify is given them; none: the socket's peer. */
  trustProxy?: TrustProxy;
}

/**
 * The three POST endpoints without fastify's per-request machinery, for the requests that make
 * up nearly all of a server's traffic: POST to exactly one of the three paths, a form body of a
 * declared length within the limit, not chunked. Returns false for any other request, before
 * reading anything, and fastify handles it with its own checks (415, 413, 405, chunked bodies). What is answered here is what the fastify routes answer: the same endpoints
 * through the same handler (`endpoints/endpoint.ts`), the same form parser, and the same answer
 * writer and request log line (`answer.ts`).
 */
export function createFastPath(options: FastPathOptions): (req: IncomingMessage, res: ServerResponse) => boolean {
  const { reporter, nextId } = options;

  async function respond(req: IncomingMessage, res: ServerResponse, endpoint: Endpoint, body: Buffer, started: number): Promise<void> {
    const id = nextId();
    const headers = req.headers;
    const request = new EndpointRequest('POST', endpoint.path, headers, clientAddress(req, options.trustProxy), () => formBodyParser(headers['content-type'], body));
    const answered = await handle(options, endpoint, request, (err) => reporter.log().error({ reqId: id, err }, 'unexpected error'));
    writeAnswer(res, answered.answer);
    if (reporting(reporter)) {
      const ms = performance.now() - started;
      reportAnswer(reporter, { reqId: id, method: 'POST', path: endpoint.path, ip: request.peer, ms, ...answered });
    }
  }

  return function fastPath(req, res) {
    if (req.method !== 'POST') return false;
    const endpoint = ENDPOINTS.get(req.url!);
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
      void respond(req, res, endpoint, Buffer.concat(chunks), started);
    });
    // An aborted request is answered to nobody; the socket is gone.
    req.on('error', () => undefined);
    return true;
  };
}
