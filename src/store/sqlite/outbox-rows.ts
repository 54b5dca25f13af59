import type { Delivery, RevocationEvent } from '../event-records.js';
import { eventOfClaim, jsonString, latestAtOf, revocationClaimJson, withPreparedRevocations, type RevocationClaim } from '../revocation-claims.js';

/*
 * The format of an outbox row (outbox-store.ts): how a transaction's revocations are written
 * into one row, and read back as a delivery's events or as its prepared claims.
 */

export type PendingRow = [number, string, Buffer, number];

/** The most outbox rows one merged read takes (a poll answer's size stays bounded). */
export const MERGE_READ_ROWS = 4096;
/** Between the first and last row ids of a merged delivery's id (event ids are UUIDs: no dots). */
export const RANGE = '..';

/** The first and last row ids of a merged delivery's id, or undefined for a plain one. */
export function rangeOf(id: string): { first: string; last: string } | undefined {
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
export type RowContent = { count: number; latestAt: number; ids: Buffer; claims: Buffer } | RevocationEvent[];

/** The first line of format 3, as bytes. */
const ROW_PREFIX_BYTES = Buffer.from(ROW_PREFIX);
const NEWLINE = 0x0a;

/**
 * An outbox row's content from its bytes (read as a BLOB: the row's claims, most of its size, go
 * into a SET as they are, and as bytes they are no string on V8's heap).
 */
export function contentOf(payload: Buffer): RowContent {
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

export const countOf = (c: RowContent): number => (Array.isArray(c) ? c.length : c.count);

function decode(c: RowContent): RevocationEvent[] {
  if (Array.isArray(c)) return c;
  const ids = JSON.parse(c.ids.toString('utf8')) as string[];
  return (JSON.parse(`[${c.claims.toString('utf8')}]`) as RevocationClaim[]).map((claim, i) => eventOfClaim(ids[i]!, claim));
}

/**
 * The delivery of these rows' events. When every row is of format 3, it carries their revocations
 * prepared for its SET, and its `events` are decoded from the rows on first read only.
 */
export function deliveryOf(receiverId: string, id: string, attempts: number, contents: RowContent[]): Delivery {
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


/**
 * A receiver's pending rows, oldest first, as deliveries of up to `mergeUpTo` events each (more
 * when one row alone holds more), at most `limit`: consecutive rows merged into one, its id
 * `FIRST..LAST` when it holds more than one (outbox-store.ts mergedPendingOf says why that is
 * exact). Stops reading at the row past what the answer takes.
 */
export function mergeRows(receiverId: string, rows: Iterable<PendingRow>, limit: number, mergeUpTo: number): Delivery[] {
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
