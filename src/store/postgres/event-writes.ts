import type { RevocationEvent } from '../event-records.js';

/*
 * How a revocation writes its security event (docs/events.md, store/event-records.ts): inside the revocation's own
 * statement, as two more common table expressions, so that the event commits with the revocation
 * or not at all, at no extra round trip. With no receiver registered they write nothing, and cost
 * one look at the empty `receivers` table.
 *
 * No event may be lost for a receiver that existed before the revocation committed, at READ
 * COMMITTED or SERIALIZABLE, although the revocation reads `receivers` in a snapshot taken before
 * its commit. Registering (and deleting) a receiver takes {@link RECEIVERS_CHANGE} first; every
 * statement that writes the outbox holds ROW EXCLUSIVE on `security_events` (as an INSERT does,
 * from its parse on), which that SHARE lock waits for and excludes:
 * - at READ COMMITTED a statement's snapshot is taken after its locks: a revocation whose INSERT
 *   waited for a receiver's registration sees the receiver; a registration that waited for a
 *   revocation commits after it (its event was not owed to it);
 * - at REPEATABLE READ and SERIALIZABLE a transaction's snapshot is its first statement's, and
 *   a statement takes it before its locks: every revocation therefore runs in a transaction
 *   that takes {@link OUTBOX_LOCK} with its BEGIN, before any snapshot (writes.ts `revoking`),
 *   a batch of token revocations too, which would otherwise run at the database's default
 *   level. At SERIALIZABLE the registration also reads `tokens` ({@link RECEIVERS_READ_TOKENS}),
 *   which a revocation writes: read-write conflicts both ways, should a revocation ever miss it.
 */

/** With the BEGIN of every revocation transaction: taken before its snapshot. */
export const OUTBOX_LOCK = 'LOCK TABLE security_events IN ROW EXCLUSIVE MODE';

/** With the BEGIN of a receiver's registration or deletion: waits for the revocations under way, and holds new ones back. */
export const RECEIVERS_CHANGE = 'LOCK TABLE security_events IN SHARE MODE';

/**
 * In a receiver's registration, at SERIALIZABLE: a read of the whole `tokens` table (a sequential
 * scan takes a relation-wide predicate lock), so that a single-statement revocation that missed
 * the receiver conflicts with it both ways. At READ COMMITTED it reads one row.
 */
export const RECEIVERS_READ_TOKENS = 'SELECT 1 FROM tokens LIMIT 1';

/** The CTE `dl`: one delivery per receiver for each event `ev` wrote, pending and due at the event's time. */
const DELIVERIES = 'dl AS (INSERT INTO event_deliveries (receiver_id, event_seq, next_attempt_at) SELECT rc.id, ev.seq, ev.at FROM ev CROSS JOIN receivers rc)';

/**
 * The two CTEs, `ev` and `dl`, that write the events of `rows` (a query of `id text, at bigint,
 * payload text` rows; a null id writes nothing) when a receiver exists, each with a delivery per
 * receiver. Add them after the statement's own CTEs.
 */
export function outboxCtes(rows: string): string {
  return `ev AS (INSERT INTO security_events (id, at, payload)
      SELECT e.id, e.at, e.payload::jsonb FROM (${rows}) AS e (id, at, payload)
      WHERE e.id IS NOT NULL AND EXISTS (SELECT 1 FROM receivers) RETURNING seq, at),
    ${DELIVERIES}`;
}

/**
 * {@link outboxCtes} for one event in parameters `$n`, `$n+1`, `$n+2` ({@link eventParams}),
 * written when `condition` holds: without the derived table, a quarter less to plan.
 */
export function oneEventCtes(n: number, condition: string): string {
  return `ev AS (INSERT INTO security_events (id, at, payload) SELECT $${n}::text, $${n + 1}::bigint, $${n + 2}::jsonb
      WHERE $${n}::text IS NOT NULL AND (${condition}) AND EXISTS (SELECT 1 FROM receivers) RETURNING seq, at),
    ${DELIVERIES}`;
}

/** The three parameters of an event (id, at, payload), all null for none. */
export function eventParams(event: RevocationEvent | undefined): [string | null, number | null, string | null] {
  return event === undefined ? [null, null, null] : [event.id, event.at, JSON.stringify(event)];
}
