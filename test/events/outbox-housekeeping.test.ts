import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/engine/clock.js';
import { MemoryStore } from '../../src/store/memory/index.js';
import { RETENTION_ERROR, type ReceiverRecord } from '../../src/store/store.js';
import { ManualTimers } from '../helpers/timers.js';
import { manualDeliverer } from './manual-deliverer.js';

/**
 * The bounded outbox in the deliverer's housekeeping (docs/events.md), on a manual clock: a poll
 * receiver that stopped polling and a push receiver that never answers have their deliveries
 * dead-lettered at their retention, and the log says, a minute after the lag warning, who is behind.
 */
const T0 = Date.UTC(2026, 0, 1);
const MINUTE = 60_000;

function receiver(id: string, delivery: 'push' | 'poll', retentionMs: number): ReceiverRecord {
  return delivery === 'push'
    ? { id, delivery, endpointUrl: `https://${id}.example.test/events`, authorization: null, caPem: null, clientId: null, audience: id, createdAt: T0, retentionMs }
    : { id, delivery, endpointUrl: null, authorization: null, caPem: null, clientId: id, audience: id, createdAt: T0, retentionMs };
}

async function setUp(lagWarningMs?: number) {
  const clock = new ManualClock(T0);
  const timers = new ManualTimers(clock);
  const store = new MemoryStore();
  const logged: { level: string; fields: Record<string, unknown>; message: string }[] = [];
  await store.createReceiver(receiver('stopped-polling', 'poll', 30 * MINUTE), {});
  await store.createReceiver(receiver('never-answers', 'push', 10 * MINUTE), {});
  const deliverer = manualDeliverer(store, timers, {
    log: (level, fields, message) => logged.push({ level, fields, message }),
    push: async () => ({ kind: 'failed', error: 'connect ECONNREFUSED' }),
    ...(lagWarningMs === undefined ? {} : { lagWarningMs }),
  });
  const emit = async (n: number) => {
    const now = clock.now();
    await store.createClient({ id: `c${n}`, name: 'c', secretHash: null, scope: '', orgId: '', audience: '', accessTtlMs: null, refreshTtlMs: null, createdAt: now, secretUpdatedAt: now, redirectUris: [], grantTypes: ['refresh_token'], loginProvider: false, requireDpop: false }, {});
    await store.deleteClient(`c${n}`, { event: { id: `00000000-0000-7000-8000-${String(n).padStart(12, '0')}`, at: now, reason: 'client_deleted', scope: 'client', clientId: `c${n}` } });
  };
  const status = async (id: string) => (await store.listReceivers()).find((r) => r.id === id)!;
  /** A minute of the clock, and the round that runs the housekeeping due by then. */
  const minute = async () => {
    clock.advance(MINUTE);
    await deliverer.tick();
  };
  const behind = () => logged.filter((l) => l.message.includes('is behind')).map((l) => l.fields.receiver);
  return { store, deliverer, logged, emit, status, minute, behind, clock };
}

describe('the bounded outbox in housekeeping', () => {
  it('dead-letters each receiver at its retention, poll too, and keeps what is newer', async () => {
    const s = await setUp();
    await s.emit(1);
    await s.deliverer.tick(); // the first round's housekeeping, and a push that fails
    for (let i = 0; i < 9; i++) await s.minute();
    expect(await s.status('never-answers')).toMatchObject({ pending: 1, dead: 0 });
    await s.emit(2);
    s.clock.advance(1);
    await s.minute(); // 10 minutes and a bit: the push receiver's first event is past its retention
    expect(await s.status('never-answers')).toMatchObject({ pending: 1, dead: 1 }); // its last error: the next push's
    expect(await s.status('stopped-polling')).toMatchObject({ pending: 2, dead: 0 });
    for (let i = 0; i < 20; i++) await s.minute(); // 30 minutes and a bit
    expect(await s.status('stopped-polling')).toMatchObject({ pending: 1, dead: 1, lastError: RETENTION_ERROR });
    expect(await s.status('never-answers')).toMatchObject({ pending: 0, dead: 2 });
    expect(s.logged.filter((l) => l.level === 'error' && l.message.includes('retention')).map((l) => l.fields.deadLetters)).toEqual([1, 1, 1]);
    // The outbox keeps the dead letters' events, for receiver retry, and nothing else.
    for (let i = 0; i < 10; i++) await s.minute();
    expect(await s.status('stopped-polling')).toMatchObject({ pending: 0, dead: 2 });
    expect(await s.store.retryDead('stopped-polling', s.clock.now(), {})).toBe(2);
    expect((await s.store.pendingDeliveries('stopped-polling', 10)).map((d) => d.id)).toHaveLength(2);
  });

  it('warns of a receiver whose oldest pending event is older than the lag warning: a minute by default, or as set', async () => {
    const s = await setUp();
    await s.emit(1);
    await s.deliverer.tick();
    expect(s.behind()).toEqual([]);
    await s.minute(); // exactly a minute: not yet over it
    expect(s.behind()).toEqual([]);
    s.clock.advance(1);
    await s.minute();
    expect(s.behind()).toEqual(['never-answers', 'stopped-polling']);
    expect(s.logged.find((l) => l.message.includes('is behind'))!).toMatchObject({ level: 'warn', fields: { oldestPendingAgeS: 120, lagWarningS: 60, pending: 1 } });

    const slow = await setUp(5 * MINUTE);
    await slow.emit(1);
    await slow.deliverer.tick();
    for (let i = 0; i < 5; i++) await slow.minute();
    expect(slow.behind()).toEqual([]);
    await slow.minute();
    expect(slow.behind()).toEqual(['never-answers', 'stopped-polling']);
  });
});
