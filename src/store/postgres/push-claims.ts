import { createHash } from 'node:crypto';
import type { Delivery, RevocationEvent } from '../event-records.js';

/**
 * How the PostgreSQL store hands a push receiver's backlog out (docs/events.md "Push"): one outbox
 * row per event and receiver, but a claim merges a receiver's consecutive pending rows into
 * deliveries of up to `mergeUpTo` events, each one SET, settled by the ids of its events (never by
 * a range of sequence numbers: those are not commit order here, and a range could take in an
 * event that committed after the claim read).
 */

/** Rows a claim reads per receiver at most, whatever it may merge: a bounded read and a bounded answer. */
export const PUSH_CLAIM_ROWS = 10_000;

/** One pending delivery row of a receiver, oldest first. */
export interface PendingRow {
  receiverId: string;
  /** The event's sequence number: with the receiver, the row's primary key. */
  seq: number;
  event: RevocationEvent;
  attempts: number;
  nextAttemptAt: number;
}

/** How many rows a claim of `perReceiver` deliveries of up to `mergeUpTo` events reads per receiver. */
export function claimRows(perReceiver: number, mergeUpTo: number | undefined): number {
  const per = Math.max(1, perReceiver);
  return mergeUpTo === undefined || mergeUpTo <= 1 ? per : Math.min(PUSH_CLAIM_ROWS, per * Math.floor(mergeUpTo));
}

/**
 * A receiver's pending rows (oldest first, the first due at `now`) as at most `perReceiver`
 * deliveries. Consecutive rows merge while they have failed as often as each other (rows that
 * failed together, or rows never tried), up to `mergeUpTo` events. The first, when it is a retry,
 * goes alone: a receiver that is down is probed with one revocation, not a thousand, and once it
 * answers its backlog goes in full SETs. Stops before a row that is not due yet.
 */
export function groupRows(rows: readonly PendingRow[], now: number, perReceiver: number, mergeUpTo = 1): Delivery[] {
  const out: Delivery[] = [];
  const cap = Math.max(1, Math.floor(mergeUpTo));
  let run: PendingRow[] = [];
  const close = () => {
    if (run.length > 0) out.push(delivery(run));
    run = [];
  };
  for (const row of rows) {
    if (out.length >= perReceiver) break;
    if (row.nextAttemptAt > now && (out.length > 0 || run.length > 0)) break;
    const head = run[0];
    if (head !== undefined && (run.length >= cap || row.attempts !== head.attempts || (out.length === 0 && head.attempts > 0))) close();
    if (out.length >= perReceiver) break;
    run.push(row);
  }
  close();
  return out.slice(0, perReceiver);
}

/**
 * A delivery of rows. One event: its id, as ever. Several: `FIRST..LAST.DIGEST`, the digest over
 * every event id in it, so that a SET's `jti` names exactly its revocations: a later claim that
 * merges otherwise (an event that committed late, between two of these) makes another `jti`,
 * which a receiver deduplicating by `jti` does not take for one it has.
 */
function delivery(rows: readonly PendingRow[]): Delivery {
  const first = rows[0]!;
  const events = rows.map((r) => r.event);
  for (const r of rows) SEQ.set(r.event, r.seq);
  return { receiverId: first.receiverId, id: mergedId(events), events, attempts: first.attempts };
}

/**
 * The sequence number of each event a claim handed out, so that its settlement deletes by primary
 * key: the objects come back from the deliverer as they went (weakly held: gone with them).
 */
const SEQ = new WeakMap<RevocationEvent, number>();

/** The sequence numbers of events a claim handed out, or undefined if one of them was not. */
export function seqsOf(events: readonly RevocationEvent[]): number[] | undefined {
  const seqs: number[] = [];
  for (const e of events) {
    const seq = SEQ.get(e);
    if (seq === undefined) return undefined;
    seqs.push(seq);
  }
  return seqs;
}

/** The id of a delivery of these events (see {@link delivery}). */
export function mergedId(events: readonly RevocationEvent[]): string {
  if (events.length === 1) return events[0]!.id;
  const digest = createHash('sha256');
  for (const e of events) digest.update(e.id).update('\n');
  return `${events[0]!.id}..${events[events.length - 1]!.id}.${digest.digest('base64url').slice(0, 12)}`;
}
