import type { Trail } from '../trail.js';
import type { EventStore } from '../store.js';
import { DuplicateReceiverError, RETENTION_ERROR, type ClaimedReceiver, type Delivery, type DeliveryOutcome, type ReceiverChange, type ReceiverRecord, type ReceiverStatus, type RevocationEvent, type SigningKeyRecord } from '../event-records.js';
import { Rollback, type Database } from './database.js';
import { isUniqueViolation } from './errors.js';
import { RECEIVERS_CHANGE, RECEIVERS_READ_TOKENS } from './event-writes.js';
import { mergePollRows, parsePollSetId, pollRows } from './poll-sets.js';
import { claimRows, groupRows, seqsOf, type PendingRow } from './push-claims.js';
import { auditParams, countedAuditAt, countedAuditParams, INSERT_AUDIT, insertAudit } from './statements.js';

/** A receiver's columns under the record's names, of the table or its alias `t`. */
function receiverColumns(t = 'receivers'): string {
  return `${t}.id, ${t}.delivery, ${t}.endpoint_url AS "endpointUrl", ${t}.auth_header AS "authorization", ${t}.ca_pem AS "caPem",
    ${t}.client_id AS "clientId", ${t}.audience, ${t}.created_at AS "createdAt", ${t}.stream, ${t}.retention_ms AS "retentionMs"`;
}
const RECEIVER_COLUMNS = receiverColumns();

const KEY_COLUMNS = 'kid, alg, private_jwk AS "privateJwk", public_jwk AS "publicJwk", created_at AS "createdAt", retired_at AS "retiredAt"';

/** The pending deliveries of the receivers $1, at most $2 each, oldest first, with when the first is due. */
const PENDING = `SELECT d.receiver_id AS "receiverId", d.event_seq AS seq, e.payload AS event, d.attempts, d.next_attempt_at AS "nextAttemptAt"
  FROM unnest($1::text[]) AS c (id)
  CROSS JOIN LATERAL (SELECT receiver_id, event_seq, attempts, next_attempt_at FROM event_deliveries
    WHERE receiver_id = c.id AND state = 'pending' ORDER BY event_seq LIMIT $2) d
  JOIN security_events e ON e.seq = d.event_seq
  ORDER BY d.receiver_id, d.event_seq`;

/**
 * Leases up to $4 push receivers to $1 until $2 + $3: those nobody holds (no lease, or one ended
 * by $2), not paused (the generated column of migration 15, from the stream's JSON), whose oldest
 * pending delivery is due at $2, the longest unleased first. SKIP LOCKED: a
 * receiver another claim (or a settlement) holds right now is passed over, never waited for;
 * and a lease another claim took after this statement's snapshot is checked again, in its new
 * version (READ COMMITTED; SERIALIZABLE fails and runs again), so each goes to one owner.
 */
const CLAIM = `WITH c AS (SELECT l.receiver_id FROM receiver_leases l JOIN receivers r ON r.id = l.receiver_id
    WHERE r.delivery = 'push' AND (l.lease_owner IS NULL OR l.lease_until <= $2)
      AND NOT r.paused
      AND (SELECT d.next_attempt_at FROM event_deliveries d WHERE d.receiver_id = l.receiver_id AND d.state = 'pending' ORDER BY d.event_seq LIMIT 1) <= $2
    ORDER BY l.lease_until, l.receiver_id COLLATE "C" LIMIT $4 FOR UPDATE OF l SKIP LOCKED)
  UPDATE receiver_leases l SET lease_owner = $1, lease_until = $2::bigint + $3::bigint FROM c, receivers r
  WHERE l.receiver_id = c.receiver_id AND r.id = c.receiver_id
  RETURNING ${receiverColumns('r')}`;

/**
 * What became of one delivery of receiver $1, said by $2: applied only while $2 holds the lease,
 * under the lease's row lock, so that a claim by another owner waits for it or passes over the
 * receiver, and a settlement after the lease moved on changes nothing. $3 names its events:
 * `bySeq`, their sequence numbers (the primary key, as the claim read them); otherwise their ids.
 * $4 the outcome's kind, $5 its time, $6 retryAt, $7 its error.
 */
function settle(bySeq: boolean): string {
  const mine = bySeq
    ? `SELECT receiver_id, event_seq FROM event_deliveries WHERE receiver_id = (SELECT id FROM holder) AND event_seq = ANY($3::bigint[]) AND state = 'pending'`
    : `SELECT d.receiver_id, d.event_seq FROM event_deliveries d JOIN security_events e ON e.seq = d.event_seq
    WHERE d.receiver_id = (SELECT id FROM holder) AND e.id = ANY($3::text[]) AND d.state = 'pending'`;
  return `WITH holder AS (SELECT receiver_id AS id FROM receiver_leases WHERE receiver_id = $1 AND lease_owner = $2 FOR NO KEY UPDATE),
  d AS (${mine}),
  gone AS (DELETE FROM event_deliveries x USING d WHERE $4 = 'delivered' AND x.receiver_id = d.receiver_id AND x.event_seq = d.event_seq RETURNING 1),
  failed AS (UPDATE event_deliveries x SET attempts = x.attempts + 1, last_error = $7,
      state = CASE WHEN $4 = 'dead' THEN 'dead' ELSE 'pending' END, next_attempt_at = coalesce($6::bigint, x.next_attempt_at)
    FROM d WHERE $4 <> 'delivered' AND x.receiver_id = d.receiver_id AND x.event_seq = d.event_seq RETURNING 1)
  UPDATE receiver_leases SET
    last_delivered_at = CASE WHEN EXISTS (SELECT 1 FROM gone) THEN $5::bigint ELSE last_delivered_at END,
    last_error = CASE WHEN EXISTS (SELECT 1 FROM failed) THEN $7 ELSE last_error END
  WHERE receiver_id = (SELECT id FROM holder) AND (EXISTS (SELECT 1 FROM gone) OR EXISTS (SELECT 1 FROM failed))`;
}
const SETTLE_BY_SEQ = settle(true);
const SETTLE_BY_ID = settle(false);

/**
 * Acknowledged SETs of receiver $1 at $3: their deliveries deleted; how many. $2: the ids of the
 * events of SETs of one event; $4–$7, per run of a merged SET (poll-sets.ts): its first event's
 * id and sequence number, and the run's bounds, taken only when that first event is the one its
 * id names (a SET of another store, or of this one before a reset, takes nothing).
 */
const ACK = `WITH runs AS (SELECT r.lo, r.hi FROM unnest($4::text[], $5::bigint[], $6::bigint[], $7::bigint[]) AS r (first_id, first_seq, lo, hi)
      JOIN security_events f ON f.seq = r.first_seq AND f.id = r.first_id),
    gone AS (DELETE FROM event_deliveries d WHERE d.receiver_id = $1 AND d.state = 'pending' AND d.event_seq IN (
        SELECT e.seq FROM security_events e WHERE e.id = ANY($2::text[])
        UNION ALL SELECT x.event_seq FROM runs JOIN event_deliveries x ON x.receiver_id = $1 AND x.event_seq BETWEEN runs.lo AND runs.hi)
      RETURNING 1),
    seen AS (UPDATE receiver_leases SET last_delivered_at = $3 WHERE receiver_id = $1 AND EXISTS (SELECT 1 FROM gone))
  SELECT count(*)::int AS n FROM gone`;

/**
 * A ReceiverChange of receiver $1 in one statement: $2, $4 and $6 say whether it names the
 * endpoint ($3), the Authorization value ($5) and the stream settings ($7), each of which may be
 * null; a null $8 keeps the retention. With $9, only if the stream is still $10 (null: none).
 */
const UPDATE_RECEIVER = `UPDATE receivers SET
    endpoint_url = CASE WHEN $2::bool THEN $3::text ELSE endpoint_url END,
    auth_header = CASE WHEN $4::bool THEN $5::text ELSE auth_header END,
    stream = CASE WHEN $6::bool THEN $7::text ELSE stream END,
    retention_ms = coalesce($8::bigint, retention_ms)
  WHERE id = $1 AND (NOT $9::bool OR stream IS NOT DISTINCT FROM $10::text)`;

const STATUS = `SELECT ${receiverColumns('r')},
    (SELECT count(*) FROM event_deliveries d WHERE d.receiver_id = r.id AND d.state = 'pending') AS pending,
    (SELECT count(*) FROM event_deliveries d WHERE d.receiver_id = r.id AND d.state = 'dead') AS dead,
    (SELECT min(e.at) FROM event_deliveries d JOIN security_events e ON e.seq = d.event_seq
      WHERE d.receiver_id = r.id AND d.state = 'pending') AS "oldestPendingAt",
    l.last_error AS "lastError", l.last_delivered_at AS "lastDeliveredAt"
  FROM receivers r JOIN receiver_leases l ON l.receiver_id = r.id ORDER BY r.id COLLATE "C"`;

/**
 * The bounded outbox: of each receiver's first $3 pending deliveries (by the primary key, in
 * event order: the old ones are there), those whose event happened before $1 less the receiver's
 * retention become dead letters, at most $2 in all, with $4 as their and the receiver's last
 * error. SKIP LOCKED: a delivery a settlement holds right now is left for the next round.
 */
const EXPIRE = `WITH x AS (SELECT d.receiver_id, d.event_seq FROM receivers r
    CROSS JOIN LATERAL (SELECT receiver_id, event_seq FROM event_deliveries
      WHERE receiver_id = r.id AND state = 'pending' ORDER BY event_seq LIMIT $3) p
    JOIN event_deliveries d ON d.receiver_id = p.receiver_id AND d.event_seq = p.event_seq
    JOIN security_events e ON e.seq = p.event_seq
    WHERE e.at < $1::bigint - r.retention_ms AND d.state = 'pending'
    ORDER BY p.event_seq LIMIT $2 FOR UPDATE OF d SKIP LOCKED),
  u AS (UPDATE event_deliveries d SET state = 'dead', last_error = $4 FROM x
    WHERE d.receiver_id = x.receiver_id AND d.event_seq = x.event_seq RETURNING d.receiver_id),
  l AS (UPDATE receiver_leases SET last_error = $4 WHERE receiver_id IN (SELECT receiver_id FROM u))
  SELECT count(*)::int AS n FROM u`;

/** How many of each receiver's oldest pending deliveries a retention round looks at. */
const EXPIRE_SCAN = 5_000;

/** Up to $1 events no delivery refers to; SKIP LOCKED lets purges on several nodes share the work. */
const PURGE_EVENTS = `WITH p AS (SELECT seq FROM security_events e
    WHERE NOT EXISTS (SELECT 1 FROM event_deliveries d WHERE d.event_seq = e.seq) ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED)
  DELETE FROM security_events WHERE seq IN (SELECT seq FROM p)`;

/** Adding a key: one at a time, whatever the node, so that the current one is always retired first. */
const KEYS_CHANGE = 'LOCK TABLE signing_keys IN SHARE ROW EXCLUSIVE MODE';


/**
 * The PostgreSQL {@link EventStore}: receivers, the outbox's deliveries and signing keys
 * (migration 5). The revocations write the outbox themselves (outbox.ts); this is everything
 * else, each call one statement or one short transaction, safe from any number of nodes.
 */
export class PostgresEvents implements EventStore {
  constructor(private readonly db: Database) {}

  async createReceiver(r: ReceiverRecord, trail: Trail): Promise<void> {
    const { audit } = trail;
    try {
      await this.db.transaction(
        async (tx) => {
          await tx.query(RECEIVERS_READ_TOKENS);
          await tx.query(
            `WITH r AS (INSERT INTO receivers (id, delivery, endpoint_url, auth_header, ca_pem, client_id, audience, created_at, stream, retention_ms)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id)
              INSERT INTO receiver_leases (receiver_id) SELECT id FROM r`,
            [r.id, r.delivery, r.endpointUrl, r.authorization, r.caPem, r.clientId, r.audience, r.createdAt, r.stream ?? null, r.retentionMs],
          );
          if (audit) await tx.query(INSERT_AUDIT, auditParams(audit));
        },
        { lock: RECEIVERS_CHANGE },
      );
    } catch (error) {
      if (isUniqueViolation(error, 'receivers_pkey')) throw new DuplicateReceiverError(r.id);
      throw error;
    }
  }

  async getReceiver(id: string): Promise<ReceiverRecord | null> {
    return (await this.db.query<ReceiverRecord>(`SELECT ${RECEIVER_COLUMNS} FROM receivers WHERE id = $1`, [id])).rows[0] ?? null;
  }

  async findPollReceiver(clientId: string): Promise<ReceiverRecord | null> {
    const sql = `SELECT ${RECEIVER_COLUMNS} FROM receivers WHERE delivery = 'poll' AND client_id = $1 ORDER BY created_at, id COLLATE "C" LIMIT 1`;
    return (await this.db.query<ReceiverRecord>(sql, [clientId])).rows[0] ?? null;
  }

  async listReceivers(): Promise<ReceiverStatus[]> {
    return (await this.db.query<ReceiverStatus>(STATUS)).rows;
  }

  async updateReceiver(id: string, change: ReceiverChange, trail: Trail): Promise<boolean> {
    const { audit } = trail;
    const { endpointUrl, authorization, stream, retentionMs } = change;
    return this.db.transaction(
      async (tx) => {
        const params = [id, endpointUrl !== undefined, endpointUrl ?? null, authorization !== undefined, authorization ?? null, stream !== undefined, stream ?? null, retentionMs ?? null, change.ifStream !== undefined, change.ifStream ?? null];
        if ((await tx.query(UPDATE_RECEIVER, params)).rowCount !== 1) return false;
        if (audit) await tx.query(INSERT_AUDIT, auditParams(audit));
        return true;
      },
      { lock: RECEIVERS_CHANGE },
    );
  }

  async expireDeliveries(now: number, limit: number): Promise<number> {
    if (limit <= 0) return 0;
    return (await this.db.query<{ n: number }>(EXPIRE, [now, limit, Math.min(EXPIRE_SCAN, limit), RETENTION_ERROR])).rows[0]?.n ?? 0;
  }

  async deleteReceiver(id: string, trail: Trail): Promise<boolean> {
    const { audit } = trail;
    return this.db.transaction(
      async (tx) => {
        const sql = `WITH d AS (DELETE FROM event_deliveries WHERE receiver_id = $1), l AS (DELETE FROM receiver_leases WHERE receiver_id = $1)
          DELETE FROM receivers WHERE id = $1`;
        if ((await tx.query(sql, [id])).rowCount !== 1) return false;
        if (audit) await tx.query(INSERT_AUDIT, auditParams(audit));
        return true;
      },
      { lock: RECEIVERS_CHANGE },
    );
  }

  async claimPushReceivers(owner: string, now: number, leaseMs: number, limit: number, perReceiver: number, mergeUpTo?: number): Promise<ClaimedReceiver[]> {
    if (limit <= 0) return [];
    const receivers = (await this.db.query<ReceiverRecord>(CLAIM, [owner, now, leaseMs, limit])).rows;
    if (receivers.length === 0) return [];
    // Read after the lease committed, in a snapshot of their own: whatever an earlier holder
    // settled before the lease came here is in it, and nobody else settles from now on.
    const pending = await this.pendingOf(receivers.map((r) => r.id), claimRows(perReceiver, mergeUpTo));
    const claimed: ClaimedReceiver[] = [];
    const idle: string[] = [];
    for (const receiver of [...receivers].sort((a, b) => compare(a.id, b.id))) {
      const mine = pending.filter((d) => d.receiverId === receiver.id);
      // Settled by the previous holder (its lease had ended) between the claim's look and this read.
      if (mine.length === 0 || mine[0]!.nextAttemptAt > now) idle.push(receiver.id);
      else claimed.push({ receiver, deliveries: groupRows(mine, now, Math.max(1, perReceiver), mergeUpTo) });
    }
    for (const id of idle) await this.releaseReceiver(owner, id);
    return claimed;
  }

  async settleDelivery(owner: string, receiverId: string, deliveryId: string, outcome: DeliveryOutcome, events?: readonly RevocationEvent[]): Promise<void> {
    const retryAt = outcome.kind === 'retry' ? outcome.retryAt : null;
    const error = outcome.kind === 'delivered' ? null : outcome.error;
    // By primary key when the claim's events come back (a thousand rows a SET); else by event id.
    const seqs = events === undefined ? undefined : seqsOf(events);
    const [sql, names] = seqs !== undefined ? [SETTLE_BY_SEQ, seqs] : [SETTLE_BY_ID, events?.map((e) => e.id) ?? [deliveryId]];
    await this.db.query(sql, [receiverId, owner, names, outcome.kind, outcome.at, retryAt, error]);
  }

  async releaseReceiver(owner: string, receiverId: string): Promise<void> {
    await this.db.query('UPDATE receiver_leases SET lease_owner = NULL, lease_until = 0 WHERE receiver_id = $1 AND lease_owner = $2', [receiverId, owner]);
  }

  async retryDead(receiverId: string, now: number, trail: Trail): Promise<number> {
    const { audit } = trail;
    // With its audit line ($3–$7, its count how many; $8 false for none), in the same statement.
    const sql = `WITH r AS (UPDATE event_deliveries SET state = 'pending', attempts = 0, next_attempt_at = $2 WHERE receiver_id = $1 AND state = 'dead' RETURNING 1),
        n AS (SELECT count(*)::int AS n FROM r),
        a AS (${insertAudit(countedAuditAt(3, 'n.n'), 'FROM n WHERE $8::bool')})
      SELECT n FROM n`;
    return (await this.db.query<{ n: number }>(sql, [receiverId, now, ...countedAuditParams(audit)])).rows[0]?.n ?? 0;
  }

  async pendingDeliveries(receiverId: string, limit: number, mergeUpTo?: number): Promise<Delivery[]> {
    if (limit <= 0) return [];
    // Merged: consecutive rows in one SET whose id names the sequence numbers it read (poll-sets.ts).
    if (mergeUpTo !== undefined && mergeUpTo > 1) return mergePollRows(await this.pendingOf([receiverId], pollRows(limit, mergeUpTo)), limit, mergeUpTo);
    return (await this.pendingOf([receiverId], limit)).map(delivery);
  }

  async ackDeliveries(receiverId: string, deliveryIds: readonly string[], at: number): Promise<number> {
    if (deliveryIds.length === 0) return 0;
    const single: string[] = [];
    const runs: [string[], number[], number[], number[]] = [[], [], [], []];
    for (const id of deliveryIds) {
      const merged = parsePollSetId(id);
      if (merged === undefined) single.push(id);
      else {
        for (const [lo, hi] of merged.runs) {
          runs[0].push(merged.firstId);
          runs[1].push(merged.firstSeq);
          runs[2].push(lo);
          runs[3].push(hi);
        }
      }
    }
    return (await this.db.query<{ n: number }>(ACK, [receiverId, single, at, ...runs])).rows[0]?.n ?? 0;
  }

  async purgeDeliveredEvents(limit: number): Promise<number> {
    if (limit <= 0) return 0;
    return (await this.db.query(PURGE_EVENTS, [limit])).rowCount ?? 0;
  }

  async listSigningKeys(): Promise<SigningKeyRecord[]> {
    return (await this.db.query<SigningKeyRecord>(`SELECT ${KEY_COLUMNS} FROM signing_keys ORDER BY created_at DESC, kid COLLATE "C" DESC`)).rows;
  }

  async addSigningKey(key: SigningKeyRecord, ifCurrent: string | null | undefined, trail: Trail): Promise<boolean> {
    const { audit } = trail;
    return this.db.transaction(
      async (tx) => {
        // Under the lock, with a snapshot taken after it, every key added before is seen.
        if (ifCurrent !== undefined) {
          const current = await tx.query<{ kid: string }>('SELECT kid FROM signing_keys WHERE retired_at IS NULL AND alg = $1', [key.alg]);
          if ((current.rows[0]?.kid ?? null) !== ifCurrent) return new Rollback(false);
        }
        await tx.query('UPDATE signing_keys SET retired_at = $1 WHERE retired_at IS NULL AND alg = $2', [key.createdAt, key.alg]);
        await tx.query('INSERT INTO signing_keys (kid, alg, private_jwk, public_jwk, created_at, retired_at) VALUES ($1, $2, $3, $4, $5, NULL)', [
          key.kid, key.alg, key.privateJwk, key.publicJwk, key.createdAt,
        ]);
        if (audit) await tx.query(INSERT_AUDIT, auditParams(audit));
        return true;
      },
      { lock: KEYS_CHANGE },
    );
  }

  async deleteRetiredKeys(before: number): Promise<number> {
    return (await this.db.query('DELETE FROM signing_keys WHERE retired_at < $1', [before])).rowCount ?? 0;
  }

  private async pendingOf(receiverIds: string[], limit: number): Promise<PendingRow[]> {
    return (await this.db.query<PendingRow>(PENDING, [receiverIds, limit])).rows;
  }
}

function delivery(row: PendingRow): Delivery {
  return { receiverId: row.receiverId, id: row.event.id, events: [row.event], attempts: row.attempts };
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
