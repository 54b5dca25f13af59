import type Database from 'better-sqlite3';
import {
  DuplicateReceiverError,
  type ClaimedReceiver,
  type Delivery,
  type DeliveryOutcome,
  type EventStore,
  type ReceiverRecord,
  type ReceiverStatus,
  type RevocationEvent,
  type SigningKeyRecord,
} from '../events.js';
import { insertUnique } from './errors.js';
import type { TransactionTail } from './group-commit.js';

/** Queues a synchronous write step for the store's next group commit (store.ts `write`). */
export type WriteStep = <T>(step: () => T) => Promise<T>;
/** Runs a synchronous read, with the store's errors in place of SQLite's (store.ts `run`). */
export type ReadStep = <T>(step: () => T) => T;

const RECEIVER_COLUMNS = `r.id, r.delivery, r.endpoint_url AS endpointUrl, r.authorization, r.ca_pem AS caPem,
  r.client_id AS clientId, r.audience, r.created_at AS createdAt`;
const KEY_COLUMNS = 'kid, alg, private_jwk AS privateJwk, public_jwk AS publicJwk, created_at AS createdAt, retired_at AS retiredAt';
/** Push receivers nobody holds (no lease, or one that ended by @now) whose oldest pending delivery is due at @now. */
const DUE_PUSH = `SELECT r.id FROM receivers r
  WHERE r.delivery = 'push' AND (r.lease_owner IS NULL OR r.lease_until <= @now)
    AND (SELECT d.next_attempt_at FROM event_deliveries d WHERE d.receiver_id = r.id AND d.state = 'pending'
         ORDER BY d.event_seq LIMIT 1) <= @now
  ORDER BY r.id LIMIT @limit`;
/** A pending delivery @deliveryId (its outbox row's id: its first event's) of @receiverId, while @owner holds the receiver's lease. */
const SETTLEABLE = `receiver_id = @receiverId AND state = 'pending'
  AND event_seq = (SELECT seq FROM security_events WHERE id = @deliveryId)
  AND EXISTS (SELECT 1 FROM receivers WHERE id = @receiverId AND lease_owner = @owner)`;

function prepareEventStatements(db: Database.Database) {
  const p = (sql: string) => db.prepare(sql);
  return {
    // The end of a transaction with revocations: one lookup when nobody listens (the first row of a small table, or none).
    hasReceivers: p('SELECT 1 FROM receivers LIMIT 1').pluck(true),
    insertEvent: p('INSERT INTO security_events (id, at, payload, refs) VALUES (?, ?, ?, (SELECT count(*) FROM receivers))'),
    fanOut: p(`INSERT INTO event_deliveries (receiver_id, event_seq, state, attempts, next_attempt_at)
      SELECT id, ?, 'pending', 0, ? FROM receivers`),

    insertReceiver: p(`INSERT INTO receivers (id, delivery, endpoint_url, authorization, ca_pem, client_id, audience, created_at)
      VALUES (@id, @delivery, @endpointUrl, @authorization, @caPem, @clientId, @audience, @createdAt)`),
    getReceiver: p(`SELECT ${RECEIVER_COLUMNS} FROM receivers r WHERE r.id = ?`),
    pollReceiver: p(`SELECT ${RECEIVER_COLUMNS} FROM receivers r WHERE r.delivery = 'poll' AND r.client_id = ? ORDER BY r.created_at, r.id LIMIT 1`),
    listReceivers: p(`SELECT ${RECEIVER_COLUMNS},
        (SELECT count(*) FROM event_deliveries d WHERE d.receiver_id = r.id AND d.state = 'pending') AS pending,
        (SELECT count(*) FROM event_deliveries d WHERE d.receiver_id = r.id AND d.state = 'dead') AS dead,
        (SELECT min(e.at) FROM event_deliveries d JOIN security_events e ON e.seq = d.event_seq
          WHERE d.receiver_id = r.id AND d.state = 'pending') AS oldestPendingAt,
        r.last_error AS lastError, r.last_delivered_at AS lastDeliveredAt
      FROM receivers r ORDER BY r.id`),
    deleteReceiver: p('DELETE FROM receivers WHERE id = ?'), // its deliveries go by ON DELETE CASCADE

    duePush: p(DUE_PUSH).pluck(true),
    lease: p('UPDATE receivers SET lease_owner = @owner, lease_until = @until WHERE id = @id'),
    release: p('UPDATE receivers SET lease_owner = NULL, lease_until = 0 WHERE id = ? AND lease_owner = ?'),
    pending: p(`SELECT d.attempts, e.id, e.payload FROM event_deliveries d JOIN security_events e ON e.seq = d.event_seq
      WHERE d.receiver_id = ? AND d.state = 'pending' ORDER BY d.event_seq LIMIT ?`).raw(true),
    delivered: p(`DELETE FROM event_deliveries WHERE ${SETTLEABLE}`),
    retry: p(`UPDATE event_deliveries SET attempts = attempts + 1, next_attempt_at = @retryAt, last_error = @error WHERE ${SETTLEABLE}`),
    dead: p(`UPDATE event_deliveries SET state = 'dead', attempts = attempts + 1, last_error = @error WHERE ${SETTLEABLE}`),
    receiverDelivered: p('UPDATE receivers SET last_delivered_at = ? WHERE id = ?'),
    receiverFailed: p('UPDATE receivers SET last_error = ? WHERE id = ?'),
    retryDead: p(`UPDATE event_deliveries SET state = 'pending', attempts = 0, next_attempt_at = ? WHERE receiver_id = ? AND state = 'dead'`),
    ack: p(`DELETE FROM event_deliveries WHERE receiver_id = @receiverId AND state = 'pending'
      AND event_seq IN (SELECT seq FROM security_events WHERE id IN (SELECT value FROM json_each(@ids)))`),
    // A merged delivery (pendingOf): its outbox rows from @first to @last, both still there.
    ackRange: p(`DELETE FROM event_deliveries WHERE receiver_id = @receiverId AND state = 'pending'
      AND event_seq BETWEEN (SELECT seq FROM security_events WHERE id = @first) AND (SELECT seq FROM security_events WHERE id = @last)`),
    purge: p('DELETE FROM security_events WHERE seq IN (SELECT seq FROM security_events WHERE refs = 0 ORDER BY seq LIMIT ?)'),

    listKeys: p(`SELECT ${KEY_COLUMNS} FROM signing_keys ORDER BY created_at DESC, kid`),
    hasCurrentKey: p('SELECT 1 FROM signing_keys WHERE retired_at IS NULL').pluck(true),
    retireCurrentKey: p('UPDATE signing_keys SET retired_at = ? WHERE retired_at IS NULL'),
    insertKey: p(`INSERT INTO signing_keys (kid, alg, private_jwk, public_jwk, created_at, retired_at)
      VALUES (@kid, @alg, @privateJwk, @publicJwk, @createdAt, NULL)`),
    deleteRetiredKeys: p('DELETE FROM signing_keys WHERE retired_at < ?'),
  };
}

/**
 * The SQLite {@link EventStore}: receivers, the outbox and signing keys in the store's own file
 * (migration 4). Every write is a step of the store's group commit, so it runs inside a BEGIN
 * IMMEDIATE transaction: writers take turns on the file, whatever process they run in, and that
 * is what makes a lease hold across `serve --workers N`, several nodes and the CLI (a claim reads
 * and takes the leases in one step; no one else can claim in between).
 */
export class SqliteEvents implements EventStore {
  private readonly st: ReturnType<typeof prepareEventStatements>;
  /** The events of the current transaction's revocations so far (see {@link tail}). */
  private collected: RevocationEvent[] = [];

  constructor(
    db: Database.Database,
    private readonly write: WriteStep,
    private readonly read: ReadStep,
  ) {
    this.st = prepareEventStatements(db);
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
   * at the first event's time: one SET, one signature and one acknowledgement per receiver for a
   * burst of revocations. Written inside the transaction, so durable with the revocations or not
   * at all; a step rolled back leaves nothing in it. With no receiver the cost is one indexed
   * lookup per transaction, exact within it (no cached flag another process could have made stale).
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
      if (this.st.hasReceivers.get() === undefined) return;
      const first = events[0]!;
      const payload = JSON.stringify(events.map(eventRow));
      const seq = this.st.insertEvent.run(first.id, first.at, payload).lastInsertRowid;
      this.st.fanOut.run(seq, first.at);
    },
  };

  async createReceiver(receiver: ReceiverRecord): Promise<void> {
    await this.write(() => insertUnique(() => this.st.insertReceiver.run(receiver), () => new DuplicateReceiverError(receiver.id)));
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

  async deleteReceiver(id: string): Promise<boolean> {
    return this.write(() => this.st.deleteReceiver.run(id).changes === 1);
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
        return { receiver: this.st.getReceiver.get(id) as ReceiverRecord, deliveries: this.pendingOf(id, perReceiver) };
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

  async retryDead(receiverId: string, now: number): Promise<number> {
    return this.write(() => this.st.retryDead.run(now, receiverId).changes);
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
      let n = single.length > 0 ? this.st.ack.run({ receiverId, ids: JSON.stringify(single) }).changes : 0;
      for (const range of ranges) n += this.st.ackRange.run({ receiverId, ...range }).changes;
      if (n > 0) this.st.receiverDelivered.run(at, receiverId);
      return n;
    });
  }

  async purgeDeliveredEvents(limit: number): Promise<number> {
    if (limit <= 0) return 0;
    return this.write(() => this.st.purge.run(limit).changes);
  }

  async listSigningKeys(): Promise<SigningKeyRecord[]> {
    return this.read(() => this.st.listKeys.all() as SigningKeyRecord[]);
  }

  async addSigningKey(key: SigningKeyRecord, ifNoCurrent = false): Promise<boolean> {
    return this.write(() => {
      if (ifNoCurrent && this.st.hasCurrentKey.get() !== undefined) return false;
      this.st.retireCurrentKey.run(key.createdAt);
      this.st.insertKey.run(key);
      return true;
    });
  }

  async deleteRetiredKeys(before: number): Promise<number> {
    return this.write(() => this.st.deleteRetiredKeys.run(before).changes);
  }

  /** A receiver's oldest pending deliveries, oldest first. */
  private pendingOf(receiverId: string, limit: number): Delivery[] {
    const rows = this.st.pending.all(receiverId, Math.max(0, limit)) as [number, string, string][];
    return rows.map(([attempts, , payload]) => {
      const events = eventsOf(payload);
      return { receiverId, id: events[0]!.id, events, attempts };
    });
  }

  /**
   * Like {@link pendingOf}, but consecutive outbox rows go out as one delivery of up to
   * `mergeUpTo` events, its id `FIRST..LAST` (the ids of its first and last rows) when it holds
   * more than one row. Acknowledging it deletes the receiver's pending deliveries from FIRST's row
   * to LAST's: exactly these, because an outbox row's seq is its place in commit order (one
   * writer at a time; a new row's seq is above every row there, and LAST is there until acked), and
   * a poll receiver's deliveries are all pending until acknowledged. Reads at most
   * {@link MERGE_READ_ROWS} rows a call (so a poll's `moreAvailable` can say false while more are
   * pending behind them: the next poll gets them).
   */
  private mergedPendingOf(receiverId: string, limit: number, mergeUpTo: number): Delivery[] {
    if (limit <= 0) return [];
    // Stepped, not fetched whole: the read stops at the row past what the answer takes.
    const rows = this.st.pending.iterate(receiverId, MERGE_READ_ROWS) as IterableIterator<[number, string, string]>;
    const out: Delivery[] = [];
    let current: { first: string; last: string; events: RevocationEvent[]; attempts: number } | undefined;
    const close = () => {
      if (!current) return;
      out.push({ receiverId, id: current.first === current.last ? current.first : `${current.first}${RANGE}${current.last}`, events: current.events, attempts: current.attempts });
      current = undefined;
    };
    for (const [attempts, id, payload] of rows) {
      const events = eventsOf(payload);
      if (current && current.events.length + events.length > mergeUpTo) close();
      if (!current) {
        if (out.length === limit) break;
        current = { first: id, last: id, events, attempts };
      } else {
        current.last = id;
        for (const e of events) current.events.push(e);
        current.attempts = Math.max(current.attempts, attempts);
      }
    }
    close();
    return out;
  }
}

/** The most outbox rows one merged read takes (a poll answer's size stays bounded). */
const MERGE_READ_ROWS = 4096;
/** Between the first and last row ids of a merged delivery's id (event ids are UUIDs: no dots). */
const RANGE = '..';

/** The first and last row ids of a merged delivery's id, or undefined for a plain one. */
function rangeOf(id: string): { first: string; last: string } | undefined {
  const at = id.indexOf(RANGE);
  if (at <= 0) return undefined;
  const first = id.slice(0, at);
  const last = id.slice(at + RANGE.length);
  return last.length > 0 && !last.includes(RANGE) ? { first, last } : undefined;
}

/**
 * An event as the outbox keeps it: an array of its members in a fixed order, absent ones null
 * (a third fewer bytes than the object, and read back faster; one commit's row then fits a page).
 */
type EventRow = [string, number, RevocationEvent['reason'], RevocationEvent['scope'], string | null, RevocationEvent['tokenType'] | null, string | null, string | null, string | null];

function eventRow(e: RevocationEvent): EventRow {
  return [e.id, e.at, e.reason, e.scope, e.jti ?? null, e.tokenType ?? null, e.grantId ?? null, e.username ?? null, e.clientId ?? null];
}

function eventOfRow(r: EventRow): RevocationEvent {
  const e: RevocationEvent = { id: r[0], at: r[1], reason: r[2], scope: r[3] };
  if (r[4] !== null) e.jti = r[4];
  if (r[5] !== null) e.tokenType = r[5];
  if (r[6] !== null) e.grantId = r[6];
  if (r[7] !== null) e.username = r[7];
  if (r[8] !== null) e.clientId = r[8];
  return e;
}

/**
 * An outbox row's payload: an array of event rows (eventRow), or what earlier builds wrote, still
 * read: an array of event objects, or one event object.
 */
function eventsOf(payload: string): RevocationEvent[] {
  const parsed = JSON.parse(payload) as RevocationEvent | RevocationEvent[] | EventRow[];
  if (!Array.isArray(parsed)) return [parsed];
  return Array.isArray(parsed[0]) ? (parsed as EventRow[]).map(eventOfRow) : (parsed as RevocationEvent[]);
}
