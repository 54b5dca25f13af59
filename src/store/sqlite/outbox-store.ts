import type { Trail } from '../trail.js';
import type { EventStore } from '../store.js';
import type Database from 'better-sqlite3';
import {
  DuplicateReceiverError,
  type ClaimedReceiver,
  type Delivery,
  type DeliveryOutcome,
  type ReceiverChange,
  type ReceiverRecord,
  type ReceiverStatus,
  type RevocationEvent,
  type SigningKeyRecord,
} from '../event-records.js';
import type { TrailWrite } from './trail.js';
import { insertUnique } from './errors.js';
import type { TransactionTail } from './group-commit.js';
import { prepareRetention } from './outbox-retention.js';
import { prepareEventStatements } from './outbox-statements.js';
import { contentOf, deliveryOf, MERGE_READ_ROWS, mergeRows, outboxPayload, rangeOf, type PendingRow } from './outbox-rows.js';

/** Queues a synchronous write step for the store's next group commit (store.ts `write`). */
export type WriteStep = <T>(step: () => T) => Promise<T>;
/** Runs a synchronous read, with the store's errors in place of SQLite's (store.ts `run`). */
export type ReadStep = <T>(step: () => T) => T;

/**
 * The SQLite {@link EventStore}: receivers, the outbox and signing keys in the store's own file
 * (migration 4). Every write is a step of the store's group commit, so it runs inside a BEGIN
 * IMMEDIATE transaction: writers take turns on the file, whatever process they run in, and that
 * is what makes a lease hold across `serve --workers N`, several nodes and the CLI (a claim reads
 * and takes the leases in one step; no one else can claim in between).
 */
export class SqliteEvents implements EventStore {
  private readonly st: ReturnType<typeof prepareEventStatements>;
  private readonly retention: ReturnType<typeof prepareRetention>;
  /** The events of the current transaction's revocations so far (see {@link tail}). */
  private collected: RevocationEvent[] = [];

  /** `trail`: the store's trail write (trail.ts), run inside a write step (a change and its audit line commit together). */
  constructor(
    db: Database.Database,
    private readonly write: WriteStep,
    private readonly read: ReadStep,
    private readonly trail: TrailWrite,
  ) {
    this.st = prepareEventStatements(db);
    this.retention = prepareRetention(db);
  }

  /**
   * Inside a revocation's write step: when `changed`, adds `event` to the events of the current
   * group-commit transaction, which {@link tail} writes at its end. Returns `changed`.
   */
  emitIf<T extends boolean | number>(changed: T, event: RevocationEvent | undefined): T {
    if (changed && event !== undefined) this.collected.push(event);
    return changed;
  }

  /**
   * The group commit's hooks (group-commit.ts TransactionTail): the events of the revocations that
   * commit together, in commit order, go out as ONE outbox row, with one delivery per receiver due
   * at the first event's time (a push receiver's delivery row; a poll receiver has its cursor): one
   * SET, one signature and one acknowledgement per receiver for a burst of revocations. Written
   * inside the transaction, so durable with the revocations or not at all; a step rolled back
   * leaves nothing in it. With no receiver the cost is one look at the receivers per transaction,
   * exact within it (no cached flag another process could have made stale).
   */
  readonly tail: TransactionTail = {
    mark: () => this.collected.length,
    rollback: (mark) => {
      this.collected.length = mark;
    },
    end: () => {
      const events = this.collected;
      if (events.length === 0) return;
      this.collected = [];
      const kinds = this.st.receiverKinds.get() as 0 | 1 | null;
      if (kinds === null) return;
      const first = events[0]!;
      const payload = outboxPayload(events);
      const seq = this.st.insertEvent.run(first.id, first.at, payload).lastInsertRowid;
      if (kinds === 1) this.st.fanOut.run(seq, first.at);
    },
  };

  async createReceiver(receiver: ReceiverRecord, trail: Trail): Promise<void> {
    await this.write(() => {
      insertUnique(() => this.st.insertReceiver.run({ stream: null, ...receiver }), () => new DuplicateReceiverError(receiver.id));
      this.trail(true, trail);
    });
  }

  async updateReceiver(id: string, change: ReceiverChange, trail: Trail): Promise<boolean> {
    const { endpointUrl, authorization, stream, retentionMs } = change;
    const params = {
      id,
      setEndpointUrl: endpointUrl === undefined ? 0 : 1,
      endpointUrl: endpointUrl ?? null,
      setAuthorization: authorization === undefined ? 0 : 1,
      authorization: authorization ?? null,
      setStream: stream === undefined ? 0 : 1,
      stream: stream ?? null,
      retentionMs: retentionMs ?? null,
      checkStream: change.ifStream === undefined ? 0 : 1,
      ifStream: change.ifStream ?? null,
    };
    // One write step (a savepoint): the change and its audit line commit together or not at all.
    return this.write(() => this.trail(this.st.updateReceiver.run(params).changes === 1, trail));
  }

  async getReceiver(id: string): Promise<ReceiverRecord | null> {
    return this.read(() => (this.st.getReceiver.get(id) as ReceiverRecord | undefined) ?? null);
  }

  async findPollReceiver(clientId: string): Promise<ReceiverRecord | null> {
    return this.read(() => (this.st.pollReceiver.get(clientId) as ReceiverRecord | undefined) ?? null);
  }

  async listReceivers(): Promise<ReceiverStatus[]> {
    return this.read(() => this.st.listReceivers.all() as ReceiverStatus[]);
  }

  async expireDeliveries(now: number, limit: number): Promise<number> {
    return limit <= 0 ? 0 : this.write(() => this.retention.expire(now, limit));
  }

  async deleteReceiver(id: string, trail: Trail): Promise<boolean> {
    return this.write(() => this.trail(this.st.deleteReceiver.run(id).changes === 1, trail));
  }

  /**
   * Looks first, outside any write transaction, whether anything is due at all: a deliverer polls
   * all the time, and an idle poll then costs one read instead of the write lock (and a sync).
   * The claim itself looks again, in its write step, before it takes any lease.
   */
  async claimPushReceivers(owner: string, now: number, leaseMs: number, limit: number, perReceiver: number): Promise<ClaimedReceiver[]> {
    if (limit <= 0) return [];
    if (this.read(() => this.st.duePush.get({ now, limit: 1 })) === undefined) return [];
    return this.write(() =>
      (this.st.duePush.all({ now, limit }) as string[]).map((id) => {
        this.st.lease.run({ owner, until: now + leaseMs, id });
        return { receiver: this.st.getReceiver.get(id) as ReceiverRecord, deliveries: this.pendingOf(id, perReceiver, this.st.pending) };
      }),
    );
  }

  async settleDelivery(owner: string, receiverId: string, deliveryId: string, outcome: DeliveryOutcome): Promise<void> {
    const where = { owner, receiverId, deliveryId };
    await this.write(() => {
      if (outcome.kind === 'delivered') {
        if (this.st.delivered.run(where).changes === 1) this.st.receiverDelivered.run(outcome.at, receiverId);
        return;
      }
      const changed = outcome.kind === 'retry' ? this.st.retry.run({ ...where, retryAt: outcome.retryAt, error: outcome.error }) : this.st.dead.run({ ...where, error: outcome.error });
      if (changed.changes === 1) this.st.receiverFailed.run(outcome.error, receiverId);
    });
  }

  async releaseReceiver(owner: string, receiverId: string): Promise<void> {
    await this.write(() => this.st.release.run(receiverId, owner));
  }

  async retryDead(receiverId: string, now: number, trail: Trail): Promise<number> {
    const { audit } = trail;
    return this.write(() => {
      // A poll receiver's dead letters are marks past its cursor (outbox-retention.ts).
      const n = this.st.deliveryOf.get(receiverId) === 'poll' ? this.retention.retryPoll(receiverId, this.st.cursor.get(receiverId) as number) : this.st.retryDead.run(now, receiverId).changes;
      // Its line is written even when none was dead, telling so (ports/outbox.ts).
      this.trail(true, { audit: audit && { ...audit, count: n } });
      return n;
    });
  }

  async pendingDeliveries(receiverId: string, limit: number, mergeUpTo?: number): Promise<Delivery[]> {
    return this.read(() => (mergeUpTo === undefined ? this.pendingOf(receiverId, limit) : this.mergedPendingOf(receiverId, limit, mergeUpTo)));
  }

  async ackDeliveries(receiverId: string, deliveryIds: readonly string[], at: number): Promise<number> {
    if (deliveryIds.length === 0) return 0;
    const single: string[] = [];
    const ranges: { first: string; last: string }[] = [];
    for (const id of deliveryIds) {
      const range = rangeOf(id);
      if (range) ranges.push(range);
      else single.push(id);
    }
    return this.write(() => {
      const kind = this.st.deliveryOf.get(receiverId) as ReceiverRecord['delivery'] | undefined;
      if (kind === undefined) return 0;
      const n = kind === 'poll' ? this.ackPoll(receiverId, single, ranges) : this.ackPush(receiverId, single, ranges);
      if (n > 0) this.st.receiverDelivered.run(at, receiverId);
      return n;
    });
  }

  /**
   * A poll receiver's acknowledgements (inside a write step): each id's outbox row (a range's rows
   * from FIRST's to LAST's) after the cursor is marked; then the cursor moves over every marked row
   * from its place on, and their marks go. In order, as a receiver acknowledges what it was given,
   * the marks live only inside this step. Returns the rows newly acknowledged.
   */
  private ackPoll(receiverId: string, single: readonly string[], ranges: readonly { first: string; last: string }[]): number {
    const start = this.st.cursor.get(receiverId) as number;
    let after = start;
    // The ids' rows, in one pass over at most ACK_SCAN_ROWS rows after the cursor, however many ids
    // (up to 1,000) the acknowledgement names: it stops once every id is found, at once in the
    // usual case (the oldest pending rows).
    const wanted = new Set<string>(single);
    for (const r of ranges) wanted.add(r.first).add(r.last);
    const found = new Map<string, number>();
    for (const [seq, id] of this.st.idsAfter.iterate(start) as IterableIterator<[number, string]>) {
      if (wanted.has(id) && !found.has(id)) found.set(id, seq);
      if (found.size === wanted.size) break;
    }
    const seqOf = (id: string, from: number) => {
      const seq = found.get(id);
      return seq !== undefined && seq > from ? seq : undefined;
    };
    let n = 0;
    const ack = (first: number, last: number) => {
      if (first <= after) return; // the cursor passed it meanwhile (an id twice in one acknowledgement)
      if (first === this.st.nextSeq.get(after)) {
        // The usual case: the oldest pending rows. The cursor moves over them, nothing is marked.
        n += this.st.unacked.get({ receiverId, first, last }) as number;
        after = last;
      } else {
        n += this.st.markAcked.run({ receiverId, first, last, after }).changes;
      }
    };
    const rows: [number, number][] = [];
    for (const range of ranges) {
      const first = seqOf(range.first, start);
      const last = first === undefined ? undefined : seqOf(range.last, first - 1);
      if (first !== undefined && last !== undefined) rows.push([first, last]);
    }
    for (const id of single) {
      const seq = seqOf(id, start);
      if (seq !== undefined) rows.push([seq, seq]);
    }
    for (const [first, last] of rows.sort((a, b) => a[0] - b[0])) ack(first, last);
    if (n > 0) {
      // Then over the rows marked right after it, if any.
      const through = this.st.ackedThrough.get({ receiverId, after }) as number;
      this.st.moveCursor.run({ receiverId, through });
      this.st.dropAcked.run({ receiverId, through });
    }
    return n;
  }

  /** A push receiver's acknowledgements by id (inside a write step): its pending deliveries of those rows go. */
  private ackPush(receiverId: string, single: readonly string[], ranges: readonly { first: string; last: string }[]): number {
    let n = single.length > 0 ? this.st.ackPush.run({ receiverId, ids: JSON.stringify(single) }).changes : 0;
    for (const range of ranges) {
      const first = this.st.pushSeqOf.get({ receiverId, id: range.first }) as number | undefined;
      const last = this.st.pushSeqOf.get({ receiverId, id: range.last }) as number | undefined;
      if (first !== undefined && last !== undefined) n += this.st.ackPushRange.run({ receiverId, first, last }).changes;
    }
    return n;
  }

  async purgeDeliveredEvents(limit: number): Promise<number> {
    if (limit <= 0) return 0;
    return this.write(() => this.st.purge.run({ limit }).changes);
  }

  async listSigningKeys(): Promise<SigningKeyRecord[]> {
    return this.read(() => this.st.listKeys.all() as SigningKeyRecord[]);
  }

  async addSigningKey(key: SigningKeyRecord, ifCurrent: string | null | undefined, trail: Trail): Promise<boolean> {
    return this.write(() => {
      if (ifCurrent !== undefined && ((this.st.currentKid.get(key.alg) as string | undefined) ?? null) !== ifCurrent) return false;
      this.st.retireCurrentKey.run(key.createdAt, key.alg);
      this.st.insertKey.run(key);
      return this.trail(true, trail);
    });
  }

  async deleteRetiredKeys(before: number): Promise<number> {
    return this.write(() => this.st.deleteRetiredKeys.run(before).changes);
  }

  /** The statement of a receiver's pending rows (a push receiver's deliveries, or what is after a poll receiver's cursor), or undefined: no such receiver. */
  private pendingStatement(receiverId: string): Database.Statement | undefined {
    const kind = this.st.deliveryOf.get(receiverId) as ReceiverRecord['delivery'] | undefined;
    return kind === undefined ? undefined : kind === 'poll' ? this.st.pollPending : this.st.pending;
  }

  /** A receiver's oldest pending deliveries, oldest first (`statement`: a claim knows its receivers push ones). */
  private pendingOf(receiverId: string, limit: number, statement = this.pendingStatement(receiverId)): Delivery[] {
    const rows = statement?.all({ receiverId, limit: Math.max(0, limit) }) as PendingRow[] | undefined;
    return (rows ?? []).map(([attempts, id, payload]) => deliveryOf(receiverId, id, attempts, [contentOf(payload)]));
  }

  /**
   * Like {@link pendingOf}, but consecutive outbox rows go out as one delivery of up to
   * `mergeUpTo` events, its id `FIRST..LAST` (the ids of its first and last rows) when it holds
   * more than one row. Acknowledging it acknowledges the receiver's rows from FIRST's to LAST's:
   * exactly these, because an outbox row's seq is its place in commit order (one writer at a
   * time; a new row's seq is above every row there, and LAST is there until acked), and the rows
   * between that are not in it were acknowledged already. Reads at most {@link MERGE_READ_ROWS}
   * rows a call (so a poll's `moreAvailable` can say false while more are pending behind them: the
   * next poll gets them).
   */
  private mergedPendingOf(receiverId: string, limit: number, mergeUpTo: number): Delivery[] {
    if (limit <= 0) return [];
    // Stepped, not fetched whole: the read stops at the row past what the answer takes.
    const statement = this.pendingStatement(receiverId);
    if (statement === undefined) return [];
    return mergeRows(receiverId, statement.iterate({ receiverId, limit: MERGE_READ_ROWS }) as IterableIterator<PendingRow>, limit, mergeUpTo);
  }
}

/** A pending row: the delivery's attempts (0 for a poll receiver), the outbox row's id, payload and seq. */
