import { InvalidRequestError } from '../engine/errors.js';
import type { OutboxStore, ReceiverRecord } from '../store/store.js';
import { ByteWriter } from './bytes.js';
import type { SigningKey, SigningKeys } from './keys.js';
import { eventSelection, streamJson, streamSettingsOf, untilWritten, type EventSelection, type StreamSettings } from '../engine/stream-settings.js';
import { hasEventsFor, signClaims, verificationClaims, writeSet, type SetContent } from './set.js';

/** RFC 8936 §2.4: `maxEvents` when the request has none, and the most one answer holds. */
export const DEFAULT_MAX_EVENTS = 100;
export const MAX_EVENTS = 1000;
/** How long a long poll (`returnImmediately: false`) waits for an event at most. */
export const LONG_POLL_MS = 25_000;
/** How often a long poll looks at the store again. */
export const LONG_POLL_CHECK_MS = 100;
/**
 * A long poll of a receiver is answered at most this often (per serving process): while
 * revocations keep coming, a receiver that polls again at once would otherwise get one small
 * answer per group commit, hundreds a second, each an acknowledgement to write and a SET to sign.
 * Waiting out the rest of the interval lets its next answer carry what arrived meanwhile; it
 * adds at most this much to an event's way to the receiver. `returnImmediately: true` is not paced.
 */
export const LONG_POLL_MIN_INTERVAL_MS = 50;
/**
 * The most revocations one SET of a poll answer carries when the store merges consecutive
 * deliveries (OutboxStore.pendingDeliveries' `mergeUpTo`; SQLite and PostgreSQL do): a burst of
 * commits, or a backlog, then goes out as a few SETs, each one signature and one ack, not one per commit.
 */
export const MERGE_UP_TO = 1000;

/** An error the receiver reports for one SET (RFC 8936 §2.4.3, the error codes of RFC 8935 §2.4). */
export interface SetError {
  err: string;
  description?: string;
}

/** A poll request's body (RFC 8936 §2.4), checked. */
export interface PollRequest {
  maxEvents: number;
  returnImmediately: boolean;
  ack: string[];
  setErrs: Record<string, SetError>;
}

/** RFC 8936 §2.5: the answer. */
export interface PollResponse {
  sets: Record<string, string>;
  moreAvailable: boolean;
}

/** What the poll did: its answer, and for the log line besides it. */
export interface PollOutcome {
  /** The answer ({@link PollResponse}) as the bytes of its JSON, written as its SETs were signed (pollAnswer). */
  body: Buffer;
  /**
   * To call once `body` has been sent (its last byte handed to the operating system): its memory
   * then serves a later answer. Not called (the answer was abandoned): it is garbage like any other.
   */
  release: () => void;
  /** Deliveries the acks (and error reports) removed. */
  acknowledged: number;
  /** The error reports received, by SET jti. */
  setErrs: Record<string, SetError>;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Reads an RFC 8936 request body; throws InvalidRequestError naming what is wrong. */
export function parsePollRequest(body: unknown): PollRequest {
  if (body === undefined || body === null) body = {};
  if (!isObject(body)) throw new InvalidRequestError('The poll request must be a JSON object (RFC 8936 §2.4)');
  const { maxEvents = DEFAULT_MAX_EVENTS, returnImmediately = false, ack = [], setErrs = {} } = body;
  if (typeof maxEvents !== 'number' || !Number.isInteger(maxEvents) || maxEvents < 0 || maxEvents > MAX_EVENTS) {
    throw new InvalidRequestError(`maxEvents must be a whole number from 0 to ${MAX_EVENTS}`, 'maxEvents');
  }
  if (typeof returnImmediately !== 'boolean') throw new InvalidRequestError('returnImmediately must be true or false', 'returnImmediately');
  if (!Array.isArray(ack) || ack.length > MAX_EVENTS || !ack.every((j) => typeof j === 'string')) {
    throw new InvalidRequestError(`ack must be an array of at most ${MAX_EVENTS} SET jti strings`, 'ack');
  }
  if (!isObject(setErrs) || Object.keys(setErrs).length > MAX_EVENTS) throw new InvalidRequestError('setErrs must be an object of SET jti to {err, description}', 'setErrs');
  const errs: Record<string, SetError> = {};
  for (const [jti, e] of Object.entries(setErrs)) {
    if (!isObject(e) || typeof e.err !== 'string' || (e.description !== undefined && typeof e.description !== 'string')) {
      throw new InvalidRequestError('each member of setErrs must be {"err": string, "description"?: string}', 'setErrs');
    }
    errs[jti] = { err: e.err.slice(0, 100), ...(e.description !== undefined ? { description: e.description.slice(0, 500) } : {}) };
  }
  return { maxEvents, returnImmediately, ack: ack as string[], setErrs: errs };
}

export interface PollDeps {
  store: OutboxStore;
  keys: SigningKeys;
  /** The issuer, read when signing (serve learns its URL once listening). */
  issuer: () => string;
  now?: () => number;
  /**
   * When each receiver's last long poll was answered with SETs (ms), shared by the polls of one
   * serving process, for the pacing of {@link LONG_POLL_MIN_INTERVAL_MS}. None: no pacing.
   */
  lastAnswered?: Map<string, number>;
}

/**
 * One RFC 8936 poll by `receiver`: acknowledges `ack` and the SETs reported in `setErrs` (the
 * receiver has them; an error report is its last word on that SET), then answers up to
 * `maxEvents` pending SETs, oldest first, signed now. With `returnImmediately: false` and nothing
 * pending it waits, looking again every {@link LONG_POLL_CHECK_MS}, until an event is pending,
 * {@link LONG_POLL_MS} pass, or `signal` aborts (the client left, the server is stopping).
 */
export async function poll(deps: PollDeps, receiver: ReceiverRecord, request: PollRequest, signal?: AbortSignal): Promise<PollOutcome> {
  const now = deps.now ?? Date.now;
  const done = [...request.ack, ...Object.keys(request.setErrs)];
  const settings = streamSettingsOf(receiver.stream);
  const verification = await verificationAfter(deps, receiver, settings, done);
  const acknowledged = done.length > 0 ? await deps.store.ackDeliveries(receiver.id, done, now()) : 0;
  const outcome = (answer: PollAnswer): PollOutcome => ({ ...answer, acknowledged, setErrs: request.setErrs });
  const selection = eventSelection(receiver.stream);
  // A CAEP stream's SETs tell of one commit each, not of a merge of many (fewer subjects in one SET).
  const mergeUpTo = selection.caep ? undefined : MERGE_UP_TO;
  // SSF 1.0 §8.1.2: a paused stream's events are held, not answered, until it is enabled again;
  // the verification event too (§8.1.2.1 makes no exception for it): nothing is transmitted.
  if (settings.status === 'paused') return outcome(pollAnswer(false));
  if (request.maxEvents === 0) {
    // Whether anything is pending: one delivery, unmerged, tells (a merge would read a thousand rows).
    return outcome(pollAnswer(verification !== undefined || (await deps.store.pendingDeliveries(receiver.id, 1)).length > 0));
  }
  if (verification !== undefined) {
    // SSF 1.0 §8.1.4: the verification event the receiver asked for, before anything else.
    const key = await deps.keys.current(settings.alg);
    const set = signClaims(verificationClaims(verification.jti, deps.issuer(), receiver.audience, receiver.id, verification.state, now()), key);
    return outcome(pollAnswer(true, undefined, { [verification.jti]: set }));
  }
  const until = now() + LONG_POLL_MS;
  if (!request.returnImmediately && deps.lastAnswered) {
    const wait = (deps.lastAnswered.get(receiver.id) ?? -Infinity) + LONG_POLL_MIN_INTERVAL_MS - now();
    if (wait > 0) await sleep(wait, signal);
  }
  const pendingNow = () => pendingFor(deps, receiver.id, request.maxEvents + 1, mergeUpTo, selection, now);
  let pending = await pendingNow();
  while (pending.length === 0 && !request.returnImmediately && now() < until && !signal?.aborted) {
    await sleep(LONG_POLL_CHECK_MS, signal);
    pending = await pendingNow();
  }
  const answered = pending.slice(0, request.maxEvents);
  if (answered.length === 0) return outcome(pollAnswer(false));
  const key = await deps.keys.current(settings.alg);
  const at = now();
  const answer = pollAnswer(pending.length > request.maxEvents, { deliveries: answered, issuer: deps.issuer(), audience: receiver.audience, key, now: at, selection });
  deps.lastAnswered?.set(receiver.id, at);
  return outcome(answer);
}

/**
 * The receiver's pending deliveries that have something for its stream; those that have nothing
 * it asked for (one access token, to a stream of session-revoked alone) are acknowledged here.
 */
async function pendingFor(deps: PollDeps, receiverId: string, limit: number, mergeUpTo: number | undefined, selection: EventSelection, now: () => number) {
  for (;;) {
    const pending = await deps.store.pendingDeliveries(receiverId, limit, mergeUpTo);
    const empty = pending.filter((d) => !hasEventsFor(d, selection));
    if (empty.length === 0) return pending;
    await deps.store.ackDeliveries(receiverId, empty.map((d) => d.id), now());
  }
}

/**
 * The verification event still to answer (SSF 1.0 §8.1.4), or none: a receiver's ack (or error
 * report) of its SET is the last of it, and clears it from the stream. A disabled stream answers
 * none and holds none (§8.1.2.1), whatever its settings kept from before it was disabled.
 */
async function verificationAfter(deps: PollDeps, receiver: ReceiverRecord, settings: StreamSettings, done: readonly string[]): Promise<StreamSettings['verification']> {
  // Written only over the settings it read: a request or status change since is read again and decided on.
  let stream = receiver.stream ?? null;
  return untilWritten(receiver.id, async (i) => {
    if (i > 0) {
      const fresh = await deps.store.getReceiver(receiver.id);
      if (!fresh) return { v: undefined };
      stream = fresh.stream ?? null;
    }
    const current = i === 0 ? settings : streamSettingsOf(stream);
    const v = current.verification;
    if (v === undefined || (current.status !== 'disabled' && !done.includes(v.jti))) return { v };
    const { verification: _gone, ...rest } = current;
    return (await deps.store.updateReceiver(receiver.id, { stream: streamJson(rest), ifStream: stream }, {})) ? { v: undefined } : null;
  }, 'this poll was answered', 'poll again').then((r) => r.v);
}

/** The SETs of an answer: these deliveries', signed by `key` at `now` (ms), with the events `selection` names. */
export interface AnswerSets {
  deliveries: readonly SetContent[];
  issuer: string;
  audience: string;
  key: SigningKey;
  now: number;
  selection?: EventSelection;
}

/** An answer's bytes, and what gives their memory back once they were sent. */
export interface PollAnswer {
  body: Buffer;
  release: () => void;
}

/**
 * The memory of answers sent, for the next ones: a new buffer of a few hundred kilobytes per
 * answer is memory outside V8's heap, and twenty of them a second made V8 run a full garbage
 * collection every second or so. At most this many are kept.
 */
const idleWriters: ByteWriter[] = [];
const IDLE_WRITERS = 4;

/**
 * The JSON of an answer ({@link PollResponse}), as `JSON.stringify` writes it, as bytes: each SET
 * written into the answer where it goes (writeSet), not made into a string and copied again (an
 * answer under load is a few hundred kilobytes). No `sets`: an answer with none.
 */
export function pollAnswer(moreAvailable: boolean, sets?: AnswerSets, signed?: Record<string, string>): PollAnswer {
  const out = (idleWriters.pop() ?? new ByteWriter(64 * 1024)).latin1('{"sets":{');
  sets?.deliveries.forEach((d, i) => {
    // A SET is base64url and dots (RFC 7515 §7.1): nothing JSON escapes.
    out.latin1(i === 0 ? '' : ',').utf8(JSON.stringify(d.id)).latin1(':"');
    writeSet(out, d, sets.issuer, sets.audience, sets.key, sets.now, sets.selection);
    out.latin1('"');
  });
  Object.entries(signed ?? {}).forEach(([jti, set], i) => out.latin1(i === 0 && !sets?.deliveries.length ? '' : ',').utf8(JSON.stringify(jti)).latin1(`:"${set}"`));
  out.latin1(`},"moreAvailable":${moreAvailable}}`);
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    if (idleWriters.length < IDLE_WRITERS) idleWriters.push(out.reset());
  };
  return { body: out.view(), release };
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
