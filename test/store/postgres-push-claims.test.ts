import { describe, expect, it } from 'vitest';
import { claimRows, groupRows, mergedId, PUSH_CLAIM_ROWS, type PendingRow } from '../../src/store/postgres/push-claims.js';
import type { RevocationEvent } from '../../src/store/store.js';

/** How a PostgreSQL claim merges a push receiver's pending rows into deliveries (docs/events.md "Push"). */
const NOW = Date.UTC(2026, 0, 1);

function event(n: number): RevocationEvent {
  return { id: `00000000-0000-7000-8000-${String(n).padStart(12, '0')}`, at: NOW - 1000, reason: 'revoked', scope: 'client', clientId: `c${n}` };
}

/** Rows 1..n, never tried, due; `changes` overrides some by number. */
function rows(n: number, changes: Record<number, Partial<PendingRow>> = {}): PendingRow[] {
  return Array.from({ length: n }, (_, i) => ({ receiverId: 'gw', seq: i + 1, event: event(i + 1), attempts: 0, nextAttemptAt: NOW - 1000, ...changes[i + 1] }));
}

const sizes = (ds: { events: unknown[] }[]) => ds.map((d) => d.events.length);

describe('PostgreSQL push claims', () => {
  it('merges consecutive rows never tried into deliveries of up to mergeUpTo, at most perReceiver of them', () => {
    expect(sizes(groupRows(rows(25), NOW, 50, 10))).toEqual([10, 10, 5]);
    expect(sizes(groupRows(rows(25), NOW, 2, 10))).toEqual([10, 10]);
    // Without mergeUpTo, one event a delivery, as before.
    expect(sizes(groupRows(rows(3), NOW, 50))).toEqual([1, 1, 1]);
  });

  it('a first row being retried goes alone (a probe); rows that failed as often as each other stay together', () => {
    const failed = { attempts: 2 };
    const r = rows(8, { 1: failed, 2: failed, 3: failed, 4: failed });
    // The probe, the rest of its failed SET, then the rows never tried.
    expect(sizes(groupRows(r, NOW, 50, 10))).toEqual([1, 3, 4]);
    expect(groupRows(r, NOW, 50, 10).map((d) => d.attempts)).toEqual([2, 2, 0]);
  });

  it('stops before a row that is not due, after the first', () => {
    const later = { attempts: 1, nextAttemptAt: NOW + 5000 };
    expect(sizes(groupRows(rows(6, { 4: later, 5: later }), NOW, 50, 10))).toEqual([3]);
  });

  it('names one event by its id, several by first..last and a digest of them all', () => {
    const [one] = groupRows(rows(1), NOW, 50, 10);
    expect(one!.id).toBe(event(1).id);
    const [three] = groupRows(rows(3), NOW, 50, 10);
    expect(three!.id).toMatch(new RegExp(`^${event(1).id}\\.\\.${event(3).id}\\.[A-Za-z0-9_-]{12}$`));
    // The same first and last, another event between: another id.
    expect(mergedId([event(1), event(2), event(3)])).not.toBe(mergedId([event(1), event(3)]));
    expect(mergedId([event(1), event(3)])).toBe(mergedId([event(1), event(3)]));
  });

  it('reads perReceiver × mergeUpTo rows, bounded', () => {
    expect(claimRows(50, undefined)).toBe(50);
    expect(claimRows(3, 10)).toBe(30);
    expect(claimRows(50, 1000)).toBe(PUSH_CLAIM_ROWS);
  });
});
