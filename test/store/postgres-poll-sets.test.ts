import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mergePollRows, parsePollSetId, pollRows, pollSetId, POLL_SET_RUNS } from '../../src/store/postgres/poll-sets.js';
import { PUSH_CLAIM_ROWS, type PendingRow } from '../../src/store/postgres/push-claims.js';
import type { PostgresStore } from '../../src/store/postgres/store.js';
import type { RevocationEvent } from '../../src/store/store.js';
import { openTestStore, PG_SKIP_MESSAGE, PG_URL, withPg } from '../helpers/pg.js';

/** How a PostgreSQL poll merges a receiver's pending rows into SETs, and how their acks settle exactly those (docs/events.md "Poll"). */
const NOW = Date.UTC(2026, 0, 1);

function event(n: number): RevocationEvent {
  return { id: `00000000-0000-7000-8000-${String(n).padStart(12, '0')}`, at: NOW - 1000, reason: 'revoked', scope: 'client', clientId: `c${n}` };
}

/** Rows of these sequence numbers, in order. */
function rows(seqs: number[]): PendingRow[] {
  return seqs.map((seq) => ({ receiverId: 'rs', seq, event: event(seq), attempts: 0, nextAttemptAt: NOW }));
}

const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);
const sizes = (ds: { events: unknown[] }[]) => ds.map((d) => d.events.length);

describe('PostgreSQL poll SETs', () => {
  it('merges consecutive rows into SETs of up to mergeUpTo, at most limit of them; one event keeps its id', () => {
    expect(sizes(mergePollRows(rows(range(1, 25)), 10, 10))).toEqual([10, 10, 5]);
    expect(sizes(mergePollRows(rows(range(1, 25)), 2, 10))).toEqual([10, 10]);
    const [one] = mergePollRows(rows([7]), 10, 10);
    expect(one!.id).toBe(event(7).id);
  });

  it('names the exact sequence numbers a SET carries, gaps left out, and reads its id back', () => {
    const [d] = mergePollRows(rows([40, 41, 42, 44, 100, 101]), 10, 1000);
    expect(d!.id).toBe(`${event(40).id}~${(40).toString(36)}+3.${(44).toString(36)}.${(100).toString(36)}+2`);
    expect(parsePollSetId(d!.id)).toEqual({ firstId: event(40).id, firstSeq: 40, runs: [[40, 42], [44, 44], [100, 101]] });
  });

  it(`closes a SET at ${POLL_SET_RUNS} runs, so that its id stays short`, () => {
    const scattered = range(0, POLL_SET_RUNS + 4).map((i) => 10 * i + 1);
    expect(sizes(mergePollRows(rows(scattered), 10, 1000))).toEqual([POLL_SET_RUNS, 4]);
  });

  it('takes no other id for a merged one: event ids, runs out of order or overlapping, too many runs or events', () => {
    expect(parsePollSetId(event(1).id)).toBeUndefined();
    expect(parsePollSetId(`${event(1).id}..${event(2).id}.abcdefabcdef`)).toBeUndefined();
    expect(parsePollSetId(`${event(1).id}~1`)).toBeUndefined();
    expect(parsePollSetId(`${event(1).id}~5+2.3`)).toBeUndefined();
    expect(parsePollSetId(`${event(1).id}~5+2.6`)).toBeUndefined();
    // Adjacent runs: a poll writes them as one.
    expect(parsePollSetId(`${event(1).id}~5+2.7`)).toBeUndefined();
    expect(parsePollSetId(`${event(1).id}~5+2.8`)).toEqual({ firstId: event(1).id, firstSeq: 5, runs: [[5, 6], [8, 8]] });
    expect(parsePollSetId(`${event(1).id}~${range(0, POLL_SET_RUNS + 1).map((i) => (3 * i).toString(36)).join('.')}`)).toBeUndefined();
    expect(parsePollSetId(`${event(1).id}~1+${(PUSH_CLAIM_ROWS + 1).toString(36)}`)).toBeUndefined();
    expect(parsePollSetId(`${event(1).id}~1+-2`)).toBeUndefined();
    expect(parsePollSetId(`~1+2`)).toBeUndefined();
  });

  it('reads limit × mergeUpTo rows, bounded', () => {
    expect(pollRows(3, 10)).toBe(30);
    expect(pollRows(101, 1000)).toBe(PUSH_CLAIM_ROWS);
    expect(pollSetId(rows([1, 2]))).toBe(`${event(1).id}~1+2`);
  });
});

if (!PG_URL) describe.skip('PostgreSQL poll SETs, acknowledged', () => it(PG_SKIP_MESSAGE, () => undefined));
else
  describe('PostgreSQL poll SETs, acknowledged', () => {
    let store: PostgresStore;
    let schema: string;
    let cleanup: () => Promise<void>;
    beforeEach(async () => {
      ({ store, schema, cleanup } = await openTestStore(PG_URL!, { poolSize: 2 }));
      await store.createReceiver({ id: 'rs', delivery: 'poll', endpointUrl: null, authorization: null, caPem: null, clientId: 'rs', audience: 'https://rs.example.test', createdAt: NOW, stream: null, retentionMs: 86_400_000 }, {});
    });
    afterEach(async () => cleanup());

    /** Writes an event and its delivery to `rs` on `db` (its own transaction, or the one open on it); its sequence number. */
    const write = async (db: { query: (sql: string, params: unknown[]) => Promise<{ rows: { seq: string }[] }> }, n: number) =>
      Number(
        (
          await db.query(
            `WITH ev AS (INSERT INTO security_events (id, at, payload) VALUES ($1, $2, $3::jsonb) RETURNING seq),
              dl AS (INSERT INTO event_deliveries (receiver_id, event_seq, next_attempt_at) SELECT 'rs', seq, $2 FROM ev) SELECT seq FROM ev`,
            [event(n).id, NOW, JSON.stringify(event(n))],
          )
        ).rows[0]!.seq,
      );
    const pendingIds = async () => (await store.pendingDeliveries('rs', 1000)).map((d) => d.id);

    it('an event that committed after the poll read, its sequence number inside the SET, is not acknowledged with it', async () => {
      await withPg(PG_URL!, schema, async (late) => {
        await withPg(PG_URL!, schema, async (db) => {
          await write(db, 1);
          await late.query('BEGIN');
          const lateSeq = await write(late, 2);
          await write(db, 3);
          await write(db, 4);
          const [set, ...more] = await store.pendingDeliveries('rs', 10, 1000);
          expect(more).toEqual([]);
          expect(set!.events.map((e) => e.id)).toEqual([event(1).id, event(3).id, event(4).id]);
          expect(parsePollSetId(set!.id)!.runs.flat()).not.toContain(lateSeq);
          await late.query('COMMIT');
          expect(await store.ackDeliveries('rs', [set!.id], NOW)).toBe(3);
          expect(await pendingIds()).toEqual([event(2).id]);
          // A second ack of the same SET, late, takes nothing either.
          expect(await store.ackDeliveries('rs', [set!.id], NOW)).toBe(0);
          expect(await pendingIds()).toEqual([event(2).id]);
          expect(await store.ackDeliveries('rs', [event(2).id], NOW)).toBe(1);
          expect(await pendingIds()).toEqual([]);
        });
      });
    });

    it("acknowledges merged and single SETs together; a merged id whose first event is not this store's takes nothing", async () => {
      const seqs = await withPg(PG_URL!, schema, async (db) => Promise.all([1, 2, 3, 4, 5].map(async (n) => write(db, n))));
      const [merged] = await store.pendingDeliveries('rs', 10, 3);
      expect(merged!.events).toHaveLength(3);
      // The same runs under another first event id: a SET of another store, or of this one before a reset.
      const forged = merged!.id.replace(event(1).id, event(9).id);
      expect(await store.ackDeliveries('rs', [forged], NOW)).toBe(0);
      expect(await store.ackDeliveries('rs', [merged!.id, event(5).id], NOW)).toBe(4);
      expect(await pendingIds()).toEqual([event(4).id]);
      expect(seqs).toHaveLength(5);
    });
  });
