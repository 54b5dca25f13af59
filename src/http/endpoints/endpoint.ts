import type { FastifyInstance } from 'fastify';
import type { Engine } from '../../engine/engine.js';
import { ServiceUnavailableError } from '../../engine/errors.js';
import type { ClientAction, ClientOutcome } from '../../engine/results.js';
import { okAnswer, replyAnswer, type Answer } from '../answer.js';
import { errorAnswer, failureOutcome } from '../error-answer.js';
import { formOf } from '../form.js';
import { EndpointRequest } from '../request.js';

/**
 * One of the three POST endpoints (spec part 4): its path, and what it does with a request: reads
 * what it needs of it and makes one engine call. Both doors run it through {@link handle}: the
 * fast path (`fast-path.ts`) and fastify's route ({@link endpointRoute}).
 */
export interface Endpoint {
  path: string;
  /** Throws (or rejects) for a refusal: the engine's errors, or the form's. */
  run(engine: Engine, request: EndpointRequest): Promise<ClientOutcome<unknown>>;
}

/** An answer, with what the log line and the observer learn beside it (never a token or a secret). */
export interface Answered {
  answer: Answer;
  /** The authenticated client, once known. */
  clientId: string | null;
  /** The jti of the token the request produced or acted on, once known. */
  jti: string | null;
  outcome: ClientAction | null;
}

export interface HandlerDeps {
  engine: Engine;
  /** The longest a request may wait for its engine call before it is answered 503; none without. */
  deadlineMs?: number;
}

/**
 * Runs `endpoint` for one request and says what to answer: the one handler both doors call.
 * `unexpected` is told of an error that was not one of ours (to be logged with its detail).
 */
export async function handle(deps: HandlerDeps, endpoint: Endpoint, request: EndpointRequest, unexpected: (err: unknown) => void): Promise<Answered> {
  try {
    const o = await withinDeadline(endpoint.run(deps.engine, request), deps.deadlineMs);
    const answer = okAnswer(o.result);
    // RFC 9449 §8.2: a fresh nonce with the answer, for the client's next proof.
    if (o.dpopNonce !== undefined) answer.headers = { 'dpop-nonce': o.dpopNonce };
    return { answer, clientId: o.clientId, jti: o.jti, outcome: o.done };
  } catch (err) {
    const answer = errorAnswer(err, endpoint.path, request.headers.authorization);
    if (answer.unexpected) unexpected(err);
    // The client is known when the request failed after the engine authenticated it.
    return { answer, jti: null, clientId: request.clientId, outcome: failureOutcome(err) };
  }
}

/**
 * `running`, or a ServiceUnavailableError after `deadlineMs`: whatever the store does (a database
 * that accepts and never answers, a request queued behind ones that wait on it), the client gets
 * an answer it can retry. The engine call goes on; what it commits then is what a lost answer
 * would have committed.
 */
async function withinDeadline<T>(running: Promise<T>, deadlineMs: number | undefined): Promise<T> {
  if (deadlineMs === undefined) return running;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ServiceUnavailableError('The token store did not answer in time; try again shortly')), deadlineMs);
  });
  try {
    return await Promise.race([running, late]);
  } finally {
    clearTimeout(timer);
    running.catch(() => undefined);
  }
}

/**
 * The fastify door of an endpoint: its route, for the requests the fast path leaves to fastify
 * (chunked bodies, `app.inject`, a server closing). fastify has parsed the form (or refused it:
 * 413, 415) by the time the handler runs.
 */
export function endpointRoute(app: FastifyInstance, endpoint: Endpoint, deps: HandlerDeps): void {
  app.post(endpoint.path, async (request, reply) => {
    const req = new EndpointRequest(request.method, request.url, request.headers, request.ip, () => formOf(request));
    const answered = await handle(deps, endpoint, req, (err) => request.log.error({ reqId: request.id, err }, 'unexpected error'));
    request.answered = answered;
    return replyAnswer(reply, answered.answer);
  });
}
