import type { Delivery } from '../event-records.js';
import { PUSH_CLAIM_ROWS, type PendingRow } from './push-claims.js';

/**
 * How the PostgreSQL store merges a poll receiver's pending rows into SETs (docs/events.md "Poll"):
 * consecutive rows, up to `mergeUpTo` events a SET, its id naming the exact sequence numbers it
 * carries, so that an acknowledgement, which comes back with nothing but that id, settles exactly
 * those events. Sequence numbers are not commit order here: a range of them taken whole could
 * cover an event that committed after the poll read, so the id lists runs of numbers it read,
 * and a number it did not read (a gap) is never in a run.
 *
 * The id: `FIRST~RUNS`, FIRST the first event's id (a UUID: no two stores, nor one store reset,
 * make the same id for other events), RUNS `START[+COUNT]` in base 36, joined by `.`, ascending.
 */

/** Runs of consecutive sequence numbers one SET's id names at most: its length stays small (a poll's ack body is bounded). */
export const POLL_SET_RUNS = 16;

/** The separator of a merged poll SET's id; no event id (a UUID) holds it. */
const FIRST = '~';

/** A merged poll SET's id, read back: the first event's id and sequence number, and its runs, inclusive. */
export interface PollSetId {
  firstId: string;
  firstSeq: number;
  runs: [lo: number, hi: number][];
}

/** How many rows a poll of `limit` SETs of up to `mergeUpTo` events reads at most. */
export function pollRows(limit: number, mergeUpTo: number): number {
  return Math.min(PUSH_CLAIM_ROWS, Math.max(1, limit) * Math.max(1, Math.floor(mergeUpTo)));
}

/**
 * A receiver's pending rows (oldest first) as at most `limit` deliveries of up to `mergeUpTo`
 * events each and at most {@link POLL_SET_RUNS} runs of sequence numbers. One event: its id.
 */
export function mergePollRows(rows: readonly PendingRow[], limit: number, mergeUpTo: number): Delivery[] {
  const cap = Math.max(1, Math.floor(mergeUpTo));
  const out: Delivery[] = [];
  let run: PendingRow[] = [];
  let runs = 0;
  const close = () => {
    if (run.length > 0) out.push(delivery(run));
    run = [];
    runs = 0;
  };
  for (const row of rows) {
    const last = run[run.length - 1];
    const opensRun = last === undefined || row.seq !== last.seq + 1;
    if (run.length >= cap || (opensRun && runs >= POLL_SET_RUNS)) close();
    if (run.length === 0 && out.length >= limit) break;
    if (run.length === 0 || opensRun) runs++;
    run.push(row);
  }
  close();
  return out;
}

function delivery(rows: readonly PendingRow[]): Delivery {
  const first = rows[0]!;
  const events = rows.map((r) => r.event);
  return { receiverId: first.receiverId, id: rows.length === 1 ? first.event.id : pollSetId(rows), events, attempts: 0 };
}

/** The id of a SET of these rows (ascending sequence numbers): see the file's comment. */
export function pollSetId(rows: readonly Pick<PendingRow, 'seq' | 'event'>[]): string {
  const parts: string[] = [];
  let start = rows[0]!.seq;
  let count = 0;
  const flush = () => parts.push(count === 1 ? start.toString(36) : `${start.toString(36)}+${count.toString(36)}`);
  for (const { seq } of rows) {
    if (count > 0 && seq === start + count) count++;
    else {
      if (count > 0) flush();
      start = seq;
      count = 1;
    }
  }
  flush();
  return `${rows[0]!.event.id}${FIRST}${parts.join('.')}`;
}

const RUN = /^([0-9a-z]{1,10})(?:\+([0-9a-z]{1,4}))?$/;

/**
 * A merged poll SET's id read back, or undefined when it is not one (an event's own id, or an id
 * no poll made: more runs or events than a SET has, runs out of order), which an ack then takes
 * for an event id: unknown, ignored.
 */
export function parsePollSetId(id: string): PollSetId | undefined {
  const at = id.indexOf(FIRST);
  if (at <= 0) return undefined;
  const parts = id.slice(at + 1).split('.');
  if (parts.length > POLL_SET_RUNS) return undefined;
  const runs: [number, number][] = [];
  let total = 0;
  for (const part of parts) {
    const m = RUN.exec(part);
    if (!m) return undefined;
    const lo = parseInt(m[1]!, 36);
    const count = m[2] === undefined ? 1 : parseInt(m[2], 36);
    const previous = runs[runs.length - 1];
    if (count < 1 || (previous !== undefined && lo <= previous[1] + 1)) return undefined;
    total += count;
    runs.push([lo, lo + count - 1]);
  }
  if (total < 2 || total > PUSH_CLAIM_ROWS) return undefined;
  return { firstId: id.slice(0, at), firstSeq: runs[0]![0], runs };
}
