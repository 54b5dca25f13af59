import type { Trail } from '../trail.js';
import type { EventStore } from '../store.js';
import type Database from 'better-sqlite3';
import {
  DuplicateReceiverError,
  type ClaimedReceiver,
  type Delivery,
  type DeliveryOutcome,
  type ReceiverRecord,
  type ReceiverStatus,
  type RevocationEvent,
  type SigningKeyRecord,
} from '../event-records.js';
import type { AuditEntry } from '../audit.js';
import { eventOfClaim, jsonString, latestAtOf, revocationClaimJson, withPreparedRevocations, type RevocationClaim } from '../revocation-claims.js';
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
/**
 * A pending delivery @deliveryId (its outbox row's id: its first event's) of push receiver
 * @receiverId, while @owner holds the receiver's lease. The outbox has no index by id: the row is
 * found among the receiver's pending deliveries, oldest first, where the deliverer took it from.
 */
const SETTLEABLE = `receiver_id = @receiverId AND state = 'pending'
  AND event_seq = (SELECT d.event_seq FROM event_deliveries d JOIN security_events e ON e.seq = d.event_seq
                   WHERE d.receiver_id = @receiverId AND d.state = 'pending' AND e.id = @deliveryId LIMIT 1)
  AND EXISTS (SELECT 1 FROM receivers WHERE id = @receiverId AND lease_owner = @owner)`;

/**
 * A poll receiver's pending outbox rows, oldest first: those after its cursor (acked_through: every
 * row up to it acknowledged) that it has not acknowledged out of order (poll_acks). The payload
 * comes as bytes (its UTF-8: a store tokenctl made is UTF-8), see contentOf.
 */
const POLL_PENDING = `SELECT 0, e.id, CAST(e.payload AS BLOB), e.seq FROM receivers r JOIN security_events e ON e.seq > r.acked_through
  WHERE r.id = @receiverId AND NOT EXISTS (SELECT 1 FROM poll_acks a WHERE a.receiver_id = r.id AND a.event_seq = e.seq)
  ORDER BY e.seq LIMIT @limit`;

/**
 * Up to @limit outbox rows nobody waits for, oldest first: rows no poll receiver has left to
 * acknowledge (at or below every poll receiver's cursor) and older than every push receiver's
 * oldest pending delivery (its first pending row by the key), but for the rows of dead letters
 * (their partial index). A row that is delivered everywhere waits while some receiver has an older
 * one pending: the outbox keeps at most what the slowest receiver has not taken yet.
 */
const PURGE = `DELETE FROM security_events WHERE seq IN (
  SELECT seq FROM security_events
  WHERE seq <= coalesce((SELECT min(acked_through) FROM receivers WHERE delivery = 'poll'), 9223372036854775807)
    AND seq < coalesce((SELECT min((SELECT d.event_seq FROM event_deliveries d WHERE d.receiver_id = r.id AND d.state = 'pending'
                                    ORDER BY d.event_seq LIMIT 1)) FROM receivers r WHERE r.delivery = 'push'), 9223372036854775807)
    AND seq NOT IN (SELECT event_seq FROM event_deliveries WHERE state = 'dead')
  ORDER BY seq LIMIT @limit)`;

/**
 * How far an acknowledgement's ids are looked for after a poll receiver's cursor, in outbox rows
 * (one pass for all of them).
 * A poll answer takes its SETs from the first MERGE_READ_ROWS pending rows, and the cursor only
 * moves forward: an id it handed out is within these (the rows acknowledged out of order between
 * count too, hence the margin). An id not found there is not acknowledged: that SET comes again.
 */
const ACK_SCAN_ROWS = 20_000;

function prepareEventStatements(db: Database.Database) {
  const p = (sql: string) => db.prepare(sql);
  return {
    // The end of a transaction with revocations: one look at a small table. NULL: no receiver
    // (nothing is written); 0: poll receivers only (no delivery rows); 1: a push receiver too.
    receiverKinds: p("SELECT max(delivery = 'push') FROM receivers").pluck(true),
    // Its seq above every row's and every poll cursor's, even once purged rows took the largest seq
    // away: a poll receiver's cursor never covers a row it has not seen.
    insertEvent: p(`INSERT INTO security_events (seq, id, at, payload) VALUES (
      max(coalesce((SELECT max(seq) FROM security_events), 0), coalesce((SELECT max(acked_through) FROM receivers), 0)) + 1, ?, ?, ?)`),
    // A delivery row per push receiver; a poll receiver has its cursor instead (POLL_PENDING).
    fanOut: p(`INSERT INTO event_deliveries (receiver_id, event_seq, state, attempts, next_attempt_at)
      SELECT id, ?, 'pending', 0, ? FROM receivers WHERE delivery = 'push'`),

    // A poll receiver starts after the newest outbox row: it gets the events of later revocations.
    insertReceiver: p(`INSERT INTO receivers (id, delivery, endpoint_url, authorization, ca_pem, client_id, audience, created_at, acked_through)
      VALUES (@id, @delivery, @endpointUrl, @authorization, @caPem, @clientId, @audience, @createdAt,
              CASE WHEN @delivery = 'poll' THEN (SELECT coalesce(max(seq), 0) FROM security_events) ELSE 0 END)`),
    deliveryOf: p('SELECT delivery FROM receivers WHERE id = ?').pluck(true),
    getReceiver: p(`SELECT ${RECEIVER_COLUMNS} FROM receivers r WHERE r.id = ?`),
    pollReceiver: p(`SELECT ${RECEIVER_COLUMNS} FROM receivers r WHERE r.delivery = 'poll' AND r.client_id = ? ORDER BY r.created_at, r.id LIMIT 1`),
    listReceivers: p(`SELECT ${RECEIVER_COLUMNS},
        CASE r.delivery WHEN 'poll'
          THEN (SELECT count(*) FROM security_events e WHERE e.seq > r.acked_through)
             - (SELECT count(*) FROM poll_acks a WHERE a.receiver_id = r.id)
          ELSE (SELECT count(*) FROM event_deliveries d WHERE d.receiver_id = r.id AND d.state = 'pending') END AS pending,
        (SELECT count(*) FROM event_deliveries d WHERE d.receiver_id = r.id AND d.state = 'dead') AS dead,
        CASE r.delivery WHEN 'poll'
          THEN (SELECT e.at FROM security_events e WHERE e.seq > r.acked_through
                  AND NOT EXISTS (SELECT 1 FROM poll_acks a WHERE a.receiver_id = r.id AND a.event_seq = e.seq) ORDER BY e.seq LIMIT 1)
          ELSE (SELECT min(e.at) FROM event_deliveries d JOIN security_events e ON e.seq = d.event_seq
                  WHERE d.receiver_id = r.id AND d.state = 'pending') END AS oldestPendingAt,
        r.last_error AS lastError, r.last_delivered_at AS lastDeliveredAt
      FROM receivers r ORDER BY r.id`),
    deleteReceiver: p('DELETE FROM receivers WHERE id = ?'), // its deliveries and poll_acks go by ON DELETE CASCADE

    duePush: p(DUE_PUSH).pluck(true),
    lease: p('UPDATE receivers SET lease_owner = @owner, lease_until = @until WHERE id = @id'),
    release: p('UPDATE receivers SET lease_owner = NULL, lease_until = 0 WHERE id = ? AND lease_owner = ?'),
    pending: p(`SELECT d.attempts, e.id, CAST(e.payload AS BLOB), e.seq FROM event_deliveries d JOIN security_events e ON e.seq = d.event_seq
      WHERE d.receiver_id = @receiverId AND d.state = 'pending' ORDER BY d.event_seq LIMIT @limit`).raw(true),
    pollPending: p(POLL_PENDING).raw(true),
    delivered: p(`DELETE FROM event_deliveries WHERE ${SETTLEABLE}`),
    retry: p(`UPDATE event_deliveries SET attempts = attempts + 1, next_attempt_at = @retryAt, last_error = @error WHERE ${SETTLEABLE}`),
    dead: p(`UPDATE event_deliveries SET state = 'dead', attempts = attempts + 1, last_error = @error WHERE ${SETTLEABLE}`),
    receiverDelivered: p('UPDATE receivers SET last_delivered_at = ? WHERE id = ?'),
    receiverFailed: p('UPDATE receivers SET last_error = ? WHERE id = ?'),
    retryDead: p(`UPDATE event_deliveries SET state = 'pending', attempts = 0, next_attempt_at = ? WHERE receiver_id = ? AND state = 'dead'`),
    // Acknowledgements of a push receiver's deliveries by id (RFC 8936 is for poll receivers; the contract allows either).
    ackPush: p(`DELETE FROM event_deliveries WHERE receiver_id = @receiverId AND state = 'pending' AND event_seq IN (
      SELECT d.event_seq FROM event_deliveries d JOIN security_events e ON e.seq = d.event_seq
      WHERE d.receiver_id = @receiverId AND d.state = 'pending' AND e.id IN (SELECT value FROM json_each(@ids)))`),
    // A poll receiver's acknowledgements: the rows' seqs (looked for in the first ACK_SCAN_ROWS rows after
    // @after), marked in poll_acks, then the cursor moved over every row marked from its place on.
    cursor: p('SELECT acked_through FROM receivers WHERE id = ?').pluck(true),
    idsAfter: p(`SELECT seq, id FROM security_events WHERE seq > ? ORDER BY seq LIMIT ${ACK_SCAN_ROWS}`).raw(true),
    markAcked: p(`INSERT OR IGNORE INTO poll_acks (receiver_id, event_seq)
      SELECT @receiverId, seq FROM security_events WHERE seq BETWEEN @first AND @last AND seq > @after`),
    // The last row before the first one not acknowledged after @after (or the newest row, when every one is).
    ackedThrough: p(`SELECT coalesce(
        (SELECT e.seq - 1 FROM security_events e WHERE e.seq > @after
           AND NOT EXISTS (SELECT 1 FROM poll_acks a WHERE a.receiver_id = @receiverId AND a.event_seq = e.seq) ORDER BY e.seq LIMIT 1),
        (SELECT max(seq) FROM security_events), @after)`).pluck(true),
    moveCursor: p('UPDATE receivers SET acked_through = @through WHERE id = @receiverId'),
    nextSeq: p('SELECT seq FROM security_events WHERE seq > ? ORDER BY seq LIMIT 1').pluck(true),
    // The rows from @first to @last not acknowledged yet (those after the cursor, not marked).
    unacked: p(`SELECT (SELECT count(*) FROM security_events WHERE seq BETWEEN @first AND @last)
      - (SELECT count(*) FROM poll_acks WHERE receiver_id = @receiverId AND event_seq BETWEEN @first AND @last)`).pluck(true),
    pushSeqOf: p(`SELECT d.event_seq FROM event_deliveries d JOIN security_events e ON e.seq = d.event_seq
      WHERE d.receiver_id = @receiverId AND d.state = 'pending' AND e.id = @id LIMIT 1`).pluck(true),
    ackPushRange: p("DELETE FROM event_deliveries WHERE receiver_id = @receiverId AND state = 'pending' AND event_seq BETWEEN @first AND @last"),
    dropAcked: p('DELETE FROM poll_acks WHERE receiver_id = @receiverId AND event_seq <= @through'),
    purge: p(PURGE),

    listKeys: p(`SELECT ${KEY_COLUMNS} FROM signing_keys ORDER BY created_at DESC, kid`),
    currentKid: p('SELECT kid FROM signing_keys WHERE retired_at IS NULL').pluck(true),
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

  /** `appendAudit`: the store's audit insert, run inside a write step (a change and its audit line commit together). */
  constructor(
    db: Database.Database,
    private readonly write: WriteStep,
    private readonly read: ReadStep,
    private readonly appendAudit: (entry: AuditEntry) => void,
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
    const { audit } = trail;
    await this.write(() => {
      insertUnique(() => this.st.insertReceiver.run(receiver), () => new DuplicateReceiverError(receiver.id));
      if (audit) this.appendAudit(audit);
    });
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

  async deleteReceiver(id: string, trail: Trail): Promise<boolean> {
    const { audit } = trail;
    return this.write(() => {
      const deleted = this.st.deleteReceiver.run(id).changes === 1;
      if (deleted && audit) this.appendAudit(audit);
      return deleted;
    });
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
      const n = this.st.retryDead.run(now, receiverId).changes;
      if (audit) this.appendAudit({ ...audit, count: n });
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
    const { audit } = trail;
    return this.write(() => {
      if (ifCurrent !== undefined && ((this.st.currentKid.get() as string | undefined) ?? null) !== ifCurrent) return false;
      this.st.retireCurrentKey.run(key.createdAt);
      this.st.insertKey.run(key);
      if (audit) this.appendAudit(audit);
      return true;
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
    const rows = statement.iterate({ receiverId, limit: MERGE_READ_ROWS }) as IterableIterator<PendingRow>;
    const out: Delivery[] = [];
    let current: { first: string; last: string; contents: RowContent[]; count: number; attempts: number } | undefined;
    const close = () => {
      if (!current) return;
      out.push(deliveryOf(receiverId, current.first === current.last ? current.first : `${current.first}${RANGE}${current.last}`, current.attempts, current.contents));
      current = undefined;
    };
    for (const [attempts, id, payload] of rows) {
      const content = contentOf(payload);
      const count = countOf(content);
      if (current && current.count + count > mergeUpTo) close();
      if (!current) {
        if (out.length === limit) break;
        current = { first: id, last: id, contents: [content], count, attempts };
      } else {
        current.last = id;
        current.contents.push(content);
        current.count += count;
        current.attempts = Math.max(current.attempts, attempts);
      }
    }
    close();
    return out;
  }
}

/** A pending row: the delivery's attempts (0 for a poll receiver), the outbox row's id, payload and seq. */
type PendingRow = [number, string, Buffer, number];

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
 * An event as earlier builds kept it in the outbox (still read): an array of its members in a
 * fixed order, absent ones null.
 */
type EventRow = [string, number, RevocationEvent['reason'], RevocationEvent['scope'], string | null, RevocationEvent['tokenType'] | null, string | null, string | null, string | null];

/** The first line of an outbox row of format 3 (outboxPayload); earlier builds wrote JSON. */
const ROW_PREFIX = '3\n';

/**
 * The outbox row of one commit's events (format 3): three lines and the revocations,
 *   `3` / `COUNT LATEST_AT` / the events' ids, a JSON array / their RevocationClaims as JSON, comma-separated
 * so that a poll answer puts the revocations into its SET as they are (store/events.ts
 * PreparedRevocations): reading rows back into events and writing them out again as claims was
 * most of what a poll cost. The events themselves are read back from the
 * ids and claims only when asked for (deliveryOf).
 */
export function outboxPayload(events: readonly RevocationEvent[]): string {
  return `${ROW_PREFIX}${events.length} ${latestAtOf(events)}\n[${events.map((e) => jsonString(e.id)).join(',')}]\n${events.map(revocationClaimJson).join(',')}`;
}

/**
 * An outbox row's events as the row holds them: format 3 (see outboxPayload), its ids and claims
 * as bytes (decoded only when its events are asked for), or decoded (earlier formats).
 */
type RowContent = { count: number; latestAt: number; ids: Buffer; claims: Buffer } | RevocationEvent[];

/** The first line of format 3, as bytes. */
const ROW_PREFIX_BYTES = Buffer.from(ROW_PREFIX);
const NEWLINE = 0x0a;

/**
 * An outbox row's content from its bytes (read as a BLOB: the row's claims, most of its size, go
 * into a SET as they are, and as bytes they are no string on V8's heap).
 */
function contentOf(payload: Buffer): RowContent {
  // Compared in place: no view of the row is made to look at its first line.
  if (payload.compare(ROW_PREFIX_BYTES, 0, ROW_PREFIX_BYTES.length, 0, ROW_PREFIX_BYTES.length) !== 0) return eventsOf(payload.toString('utf8'));
  const head = payload.indexOf(NEWLINE, ROW_PREFIX_BYTES.length);
  const ids = payload.indexOf(NEWLINE, head + 1);
  const [count, latestAt] = payload.toString('latin1', ROW_PREFIX_BYTES.length, head).split(' ');
  return {
    count: Number(count),
    latestAt: Number(latestAt),
    ids: payload.subarray(head + 1, ids),
    claims: payload.subarray(ids + 1),
  };
}

const countOf = (c: RowContent): number => (Array.isArray(c) ? c.length : c.count);

function decode(c: RowContent): RevocationEvent[] {
  if (Array.isArray(c)) return c;
  const ids = JSON.parse(c.ids.toString('utf8')) as string[];
  return (JSON.parse(`[${c.claims.toString('utf8')}]`) as RevocationClaim[]).map((claim, i) => eventOfClaim(ids[i]!, claim));
}

/**
 * The delivery of these rows' events. When every row is of format 3, it carries their revocations
 * prepared for its SET, and its `events` are decoded from the rows on first read only.
 */
function deliveryOf(receiverId: string, id: string, attempts: number, contents: RowContent[]): Delivery {
  if (contents.some(Array.isArray)) return { receiverId, id, events: contents.flatMap(decode), attempts };
  const d = { receiverId, id, attempts } as Delivery;
  const settle = (events: RevocationEvent[]) => {
    Object.defineProperty(d, 'events', { value: events, enumerable: true, writable: true, configurable: true });
    return events;
  };
  Object.defineProperty(d, 'events', { enumerable: true, configurable: true, get: () => settle(contents.flatMap(decode)), set: settle });
  const rows = contents as Exclude<RowContent, RevocationEvent[]>[];
  let latestAt = rows[0]!.latestAt;
  let count = 0;
  for (const r of rows) {
    count += r.count;
    if (r.latestAt > latestAt) latestAt = r.latestAt;
  }
  return withPreparedRevocations(d, { parts: rows.map((r) => r.claims), count, latestAt });
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
 * The events of an outbox row earlier builds wrote: an array of event rows (EventRow), an array
 * of event objects, or one event object.
 */
function eventsOf(payload: string): RevocationEvent[] {
  const parsed = JSON.parse(payload) as RevocationEvent | RevocationEvent[] | EventRow[];
  if (!Array.isArray(parsed)) return [parsed];
  return Array.isArray(parsed[0]) ? (parsed as EventRow[]).map(eventOfRow) : (parsed as RevocationEvent[]);
}
