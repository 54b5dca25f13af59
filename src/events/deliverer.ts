import { randomBytes } from 'node:crypto';
import { systemClock, type Clock } from '../engine/clock.js';
import type { ClaimedReceiver, Delivery, DeliveryOutcome, OutboxStore } from '../store/store.js';
import { KEY_ROTATION_REFUSED, KeyRotationError, type SigningKey, type SigningKeys } from './keys.js';
import { expireDeliveries, warnLagging } from './outbox-housekeeping.js';
import { pushSet, PUSH_TIMEOUT_MS, type PushResult } from './push.js';
import { eventSelection, streamSettingsOf, type EventSelection } from '../engine/stream-settings.js';
import { hasEventsFor, signSet } from './set.js';

/** How often a deliverer looks for due deliveries. */
export const CLAIM_INTERVAL_MS = 100;
/** How long a claimed receiver is this deliverer's; a crashed deliverer's receivers go to another after it. */
export const LEASE_MS = 30_000;
/**
 * Retries: the first after 1 s, doubling, at most 4 s apart, each ±20 % (jitter). A retry is one
 * revocation (the store probes with one, PostgreSQL at least), so retrying often costs a receiver
 * that is down little, and one that comes back is caught up within seconds, not a minute.
 */
export const FIRST_RETRY_MS = 1_000;
export const MAX_RETRY_MS = 4_000;
/** Revocations one pushed SET carries at most, where the store merges deliveries (~250 kB). */
export const SET_MAX_REVOCATIONS = 1_000;
/** SETs in flight to one receiver at once (after its first of a claim is accepted). */
export const IN_FLIGHT_PER_RECEIVER = 4;
/** How often delivered events are purged, and key maintenance done. */
const HOUSEKEEPING_MS = 60_000;
/**
 * A purge deletes this many events per write at most, and goes on while a write finds that many,
 * up to PURGE_MAX_BATCHES a round: a busy server writes an outbox row per group commit (tens of
 * thousands a minute under load), which one batch a minute would never catch up with.
 */
export const PURGE_BATCH = 1000;
export const PURGE_MAX_BATCHES = 500;

/** The nominal wait after the `attempts`-th failure (1-based): 1 s, 2 s, 4 s … 60 s. */
export function retryDelay(attempts: number): number {
  return Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** Math.min(30, Math.max(0, attempts - 1)));
}

/**
 * What to record after a failed push, the delivery having failed `attempts` times before. It is
 * given up on (a dead letter) once it fails at or after `giveUpAt`: its oldest event's time plus
 * the receiver's retention, the same bound housekeeping applies to every pending delivery
 * (docs/events.md "Retention"), so that one rule, not a fixed day, ends a push receiver's retries.
 */
export function failureOutcome(result: Exclude<PushResult, { kind: 'accepted' }>, attempts: number, now: number, random: () => number = Math.random, giveUpAt = Infinity): DeliveryOutcome {
  const failures = attempts + 1;
  if (result.kind === 'rejected' || now >= giveUpAt) return { kind: 'dead', at: now, error: result.error };
  const jitter = 0.8 + 0.4 * random();
  return { kind: 'retry', at: now, retryAt: now + Math.round(retryDelay(failures) * jitter), error: result.error };
}

/** How the deliverer schedules its rounds; tests pass timers that fire when their clock is advanced. */
export interface Timers {
  /** Calls `fn` after `ms`; a round's promise is what `fn` returns, for timers that wait on it. */
  setTimeout(fn: () => unknown, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** Node's timers, unref'd: the deliverer alone never keeps a process alive. */
export const systemTimers: Timers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms).unref(),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export interface DelivererOptions {
  store: OutboxStore;
  keys: SigningKeys;
  /** The issuer, read when signing. */
  issuer: () => string;
  /** Who holds leases: unique per process (default: random). */
  owner?: string;
  /** Time for leases, retries, housekeeping and SETs' `iat`, as the engine takes it (default: the system's). */
  clock?: Clock;
  /** Where rounds are scheduled (default: Node's timers). */
  timers?: Timers;
  /** Told of what happened, for the server's log; never a SET or an Authorization value. */
  log?: (level: 'info' | 'warn' | 'error', fields: Record<string, unknown>, message: string) => void;
  intervalMs?: number;
  leaseMs?: number;
  pushTimeoutMs?: number;
  /** Deliveries taken per receiver per claim. */
  perReceiver?: number;
  /** Revocations a store may merge into one SET (default {@link SET_MAX_REVOCATIONS}). */
  mergeUpTo?: number;
  /** SETs in flight per receiver (default {@link IN_FLIGHT_PER_RECEIVER}). */
  inFlightPerReceiver?: number;
  /** Receivers claimed at once. */
  receivers?: number;
  /** Housekeeping warns of a receiver whose oldest pending delivery is older than this (ms; default a minute). */
  lagWarningMs?: number;
  /** Told of every settled push (metrics). */
  onOutcome?: (kind: DeliveryOutcome['kind']) => void;
  /** The push itself (tests). */
  push?: typeof pushSet;
}

/**
 * The push loop (RFC 8935) of one serving process. Every {@link CLAIM_INTERVAL_MS} it leases the
 * push receivers with a due delivery that no other process holds, and for each sends its SETs
 * (one per delivery: the revocations that committed together, or a backlog the store merged), in
 * event order: the first alone, then up to {@link IN_FLIGHT_PER_RECEIVER} at once. It settles
 * each: delivered (any 2xx), retried later with backoff (nothing later of the receiver's is sent
 * until it is), or dead (400 with an error, or a failure past the receiver's retention).
 * Every process of every node runs one; the store's leases make each receiver one process's at a
 * time, and the outbox makes a crash lose nothing (a SET may then be sent twice: receivers
 * dedupe by `jti`). Each receiver's deliveries go on beside the rounds: one that is slow holds
 * back its own events only.
 */
export class PushDeliverer {
  readonly owner: string;
  private readonly now: () => number;
  private readonly intervalMs: number;
  private readonly leaseMs: number;
  private readonly pushTimeoutMs: number;
  private readonly timers: Timers;
  private timer: unknown;
  private running: Promise<void> | undefined;
  /** Not started, or stopped: no round is scheduled. */
  private stopped = true;
  /** stop() was called: a round in progress sends nothing more. */
  private stopping = false;
  /** When housekeeping last saw to the signing keys, and last purged. */
  private lastKeyCheck = 0;
  private lastPurge = 0;
  private lastFailureLogged = -Infinity;
  /** Per receiver: when a retry was last logged, and the failures not logged since. */
  private readonly retryLogged = new Map<string, number>();
  private readonly retriesNotLogged = new Map<string, number>();
  private readonly push: typeof pushSet;
  /** The receivers this process is delivering to now, by id: each has one delivery at a time. */
  private readonly inFlight = new Map<string, Promise<void>>();

  constructor(private readonly options: DelivererOptions) {
    this.owner = options.owner ?? `deliverer-${process.pid}-${randomBytes(6).toString('hex')}`;
    const clock = options.clock ?? systemClock;
    this.now = () => clock.now();
    this.timers = options.timers ?? systemTimers;
    this.intervalMs = options.intervalMs ?? CLAIM_INTERVAL_MS;
    this.leaseMs = options.leaseMs ?? LEASE_MS;
    this.pushTimeoutMs = options.pushTimeoutMs ?? PUSH_TIMEOUT_MS;
    this.push = options.push ?? pushSet;
  }

  /**
   * Starts the rounds. `keysCheckedAt`: the signing keys were just seen to then (serve's start),
   * so housekeeping leaves them for a minute after it; the purge runs in the first round.
   */
  start(options: { keysCheckedAt?: number } = {}): void {
    if (!this.stopped) return;
    if (options.keysCheckedAt !== undefined) this.lastKeyCheck = options.keysCheckedAt;
    this.stopped = false;
    this.stopping = false;
    this.schedule(0);
  }

  /** Stops claiming; waits for the pushes in flight to be settled, then releases the leases. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.stopping = true;
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
    await Promise.all(this.inFlight.values());
  }

  /** One round: claim, deliver, settle (and now and then housekeeping), waiting for its pushes. Exposed for tests. */
  async tick(): Promise<void> {
    await Promise.all(await this.round());
  }

  /**
   * Claims the receivers with a due delivery and starts delivering to each that this process is
   * not already delivering to; returns the deliveries started. The scheduler does not wait for
   * them: a receiver that is slow or never answers holds back only its own events, never the
   * other receivers' next round.
   */
  private async round(): Promise<Promise<void>[]> {
    const now = this.now();
    if (now - this.lastKeyCheck >= HOUSEKEEPING_MS) {
      this.lastKeyCheck = now;
      await this.maintainKeys();
    }
    if (now - this.lastPurge >= HOUSEKEEPING_MS) {
      this.lastPurge = now;
      await this.purge();
    }
    const claimed = await this.options.store.claimPushReceivers(this.owner, now, this.leaseMs, this.options.receivers ?? 16, this.options.perReceiver ?? 50, this.options.mergeUpTo ?? SET_MAX_REVOCATIONS);
    const started: Promise<void>[] = [];
    for (const c of claimed) {
      if (this.inFlight.has(c.receiver.id)) continue;
      const delivery = this.deliver(c, now)
        .catch((err: unknown) => this.options.log?.('warn', { err, receiver: c.receiver.id }, 'event delivery failed; trying again'))
        .finally(() => this.inFlight.delete(c.receiver.id));
      this.inFlight.set(c.receiver.id, delivery);
      started.push(delivery);
    }
    return started;
  }

  private schedule(delay: number): void {
    if (this.stopped) return;
    this.timer = this.timers.setTimeout(() => {
      const round = this.round();
      this.running = round
        .then(() => undefined)
        .catch((err: unknown) => {
          // The store unreachable fails every round: say so once a minute, not ten times a second.
          const now = this.now();
          if (now - this.lastFailureLogged >= HOUSEKEEPING_MS) {
            this.lastFailureLogged = now;
            this.options.log?.('error', { err }, 'event delivery failed; trying again');
          }
        })
        .finally(() => {
          this.running = undefined;
          // The next round once this one has claimed, not once its pushes are done.
          this.schedule(this.intervalMs);
        });
      // For whoever awaits the timer (the tests' manual timers): the round and the pushes it
      // started. Real timers ignore what their callback returns.
      return round.then((started) => Promise.all(started)).then(() => undefined, () => undefined);
    }, delay);
  }

  /**
   * One receiver's deliveries while the lease lasts, started in event order; its lease is released
   * after. The first goes alone: a receiver that is down costs one SET per retry. Once it is
   * accepted, up to `inFlightPerReceiver` go at once (they may arrive in any order: RFC 8935 does
   * not order SETs, and revocations commute). A retry stops the starting of later ones, so
   * nothing the receiver has not had goes out again before the failed one (docs/events.md).
   */
  private async deliver(claimed: ClaimedReceiver, claimedAt: number): Promise<void> {
    const { receiver, deliveries } = claimed;
    const store = this.options.store;
    const width = Math.max(1, this.options.inFlightPerReceiver ?? IN_FLIGHT_PER_RECEIVER);
    try {
      // The stream's algorithm and events (SSF: events_requested); an operator's receiver has the defaults.
      const key = await this.options.keys.current(streamSettingsOf(receiver.stream).alg);
      const selection = eventSelection(receiver.stream);
      let held = false;
      let next = 0;
      // Keep a margin: a push started now must be settled before the lease ends.
      const more = () => !held && !this.stopping && next < deliveries.length && this.now() + this.pushTimeoutMs + 1_000 <= claimedAt + this.leaseMs;
      const one = async (d: Delivery): Promise<void> => {
        try {
          if (!(await this.pushOne(receiver, d, key, selection))) held = true;
        } catch (err) {
          held = true;
          throw err;
        }
      };
      if (more()) await one(deliveries[next++]!);
      const lane = async (): Promise<void> => {
        while (more()) await one(deliveries[next++]!);
      };
      // Every lane done before the lease is released (a store error in one stops the others starting).
      const lanes = await Promise.allSettled(Array.from({ length: width }, lane));
      const failed = lanes.find((l): l is PromiseRejectedResult => l.status === 'rejected');
      if (failed !== undefined) throw failed.reason;
    } finally {
      await store.releaseReceiver(this.owner, receiver.id).catch(() => undefined);
    }
  }

  /** Signs, pushes and settles one delivery; false when it is to be retried (the receiver's later ones wait). */
  private async pushOne(receiver: ClaimedReceiver['receiver'], d: Delivery, key: SigningKey, selection: EventSelection): Promise<boolean> {
    const store = this.options.store;
    // Nothing the stream asked for (one access token, to a stream of session-revoked alone): settled unsent.
    if (!hasEventsFor(d, selection)) {
      await store.settleDelivery(this.owner, receiver.id, d.id, { kind: 'delivered', at: this.now() }, d.events);
      return true;
    }
    const set = await signSet(d, this.options.issuer(), receiver.audience, key, this.now(), selection);
    const result = await this.push(receiver, set, this.pushTimeoutMs);
    const at = this.now();
    if (result.kind === 'accepted') {
      await store.settleDelivery(this.owner, receiver.id, d.id, { kind: 'delivered', at }, d.events);
      this.options.onOutcome?.('delivered');
      return true;
    }
    const outcome = failureOutcome(result, d.attempts, at, Math.random, d.events[0]!.at + receiver.retentionMs);
    await store.settleDelivery(this.owner, receiver.id, d.id, outcome, d.events);
    this.options.onOutcome?.(outcome.kind);
    // A retry every few seconds is logged once a minute per receiver (with the failures since); a dead letter always.
    const retries = (this.retriesNotLogged.get(receiver.id) ?? 0) + 1;
    if (outcome.kind === 'dead' || at - (this.retryLogged.get(receiver.id) ?? -Infinity) >= HOUSEKEEPING_MS) {
      if (outcome.kind === 'retry') this.retryLogged.set(receiver.id, at);
      this.retriesNotLogged.delete(receiver.id);
      const fields = { receiver: receiver.id, event: d.id, revocations: d.events.length, attempts: d.attempts + 1, error: result.error, ...(retries > 1 ? { failuresSinceLogged: retries } : {}) };
      this.options.log?.(outcome.kind === 'dead' ? 'error' : 'warn', fields, outcome.kind === 'dead' ? 'event delivery given up: dead letter' : 'event delivery failed; will retry');
    } else this.retriesNotLogged.set(receiver.id, retries);
    // A dead letter: go on with the next.
    return outcome.kind !== 'retry';
  }

  /** Housekeeping, keys: rotation when due (a refusal says the old key signs on), retired keys deleted. */
  private async maintainKeys(): Promise<void> {
    try {
      await this.options.keys.maintain();
    } catch (err) {
      if (err instanceof KeyRotationError) this.options.log?.('error', { err }, KEY_ROTATION_REFUSED);
      else this.options.log?.('warn', { err }, 'event housekeeping failed: signing keys not maintained; trying again in a minute');
    }
  }

  /**
   * Housekeeping, outbox: the receivers' retention first (its dead letters keep their events),
   * the lag warning, then the events every receiver has, in batches while they come full.
   */
  private async purge(): Promise<void> {
    const now = this.now();
    await expireDeliveries(this.options.store, now, () => this.stopping, this.options.log);
    await warnLagging(this.options.store, now, this.options.lagWarningMs ?? 60_000, this.options.log);
    try {
      for (let batch = 0; batch < PURGE_MAX_BATCHES && !this.stopping; batch++) {
        if ((await this.options.store.purgeDeliveredEvents(PURGE_BATCH)) < PURGE_BATCH) break;
      }
    } catch (err) {
      this.options.log?.('warn', { err }, 'event housekeeping failed: delivered events not purged');
    }
  }
}
