import type { FastifyInstance } from 'fastify';
import type { Engine } from '../../engine/engine.js';
import type { ClientAction, ClientOutcome } from '../../engine/results.js';
import { okAnswer, replyAnswer, type Answer } from '../answer.js';
import { errorAnswer, failureFacts } from '../error-answer.js';
import { formOf, type Form } from '../form.js';
import type { AnswerOutcome } from '../observer.js';
import type { StoreFaults } from '../store-faults.js';

/**
 * One of the three POST endpoints (spec part 4): its path, and what it does with a request's form
 * and Authorization header: checks them and makes one engine call. Both doors run it through
 * {@link handle}: the fast path (`fast-path.ts`) and fastify's route ({@link endpointRoute}).
 */
export interface Endpoint {
  path: string;
  /**
   * Throws (or rejects) for a refusal: the engine's errors, or the form's. `ip`: the peer, for the
   * brute-force budgets.
   */
  run(engine: Engine, form: Form, authorization: string | undefined, ip: string | undefined): Promise<ClientOutcome<unknown>>;
}

/** An answer, with what the log line and the observer learn beside it (never a token or a secret). */
export interface Answered {
  answer: Answer;
  /** The authenticated client, once known. */
  clientId: string | null;
  /** The jti of the token the request produced or acted on, once known. */
  jti: string | null;
  outcome: AnswerOutcome | null;
}

export interface HandlerDeps {
  engine: Engine;
  /** Where storage faults are noted for /healthz. */
  storeFaults: StoreFaults;
}

/**
 * Runs `endpoint` for one request and says what to answer: the one handler both doors call.
 * `form` is called inside, so that a body that cannot be parsed is answered like any refusal;
 * `unexpected` is told of an error that was not one of ours (to be logged with its detail).
 */
export async function handle(
  deps: HandlerDeps,
  endpoint: Endpoint,
  form: () => Form,
  authorization: string | undefined,
  ip: string | undefined,
  unexpected: (err: unknown) => void,
): Promise<Answered> {
  try {
    const o = await endpoint.run(deps.engine, form(), authorization, ip);
    return { answer: okAnswer(o.result), clientId: o.clientId, jti: o.jti, outcome: outcomeOf(o.done) };
  } catch (err) {
    deps.storeFaults.note(err);
    const answer = errorAnswer(err, endpoint.path, authorization);
    if (answer.unexpected) unexpected(err);
    return { answer, jti: null, ...failureFacts(err) };
  }
}

/** The engine's account of what it did, in the observer's terms. */
function outcomeOf(done: ClientAction): AnswerOutcome {
  return done.kind === 'revoked' ? { kind: 'revoked', scope: done.grant ? 'grant' : 'single' } : done;
}

/**
 * The fastify door of an endpoint: its route, for the requests the fast path leaves to fastify
 * (chunked bodies, `app.inject`, a server closing). fastify has parsed the form (or refused it:
 * 413, 415) by the time the handler runs.
 */
export function endpointRoute(app: FastifyInstance, endpoint: Endpoint, deps: HandlerDeps): void {
  app.post(endpoint.path, async (request, reply) => {
    const answered = await handle(deps, endpoint, () => formOf(request), request.headers.authorization, request.ip, (err) =>
      request.log.error({ reqId: request.id, err }, 'unexpected error'),
    );
    request.answered = answered;
    return replyAnswer(reply, answered.answer);
  });
}
