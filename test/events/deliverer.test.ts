import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/engine/clock.js';
import { CLAIM_INTERVAL_MS, failureOutcome, MAX_RETRY_MS, PURGE_BATCH, PURGE_MAX_BATCHES, PushDeliverer, retryDelay } from '../../src/events/deliverer.js';
import { KEY_ROTATION_MS } from '../../src/engine/signing-keys.js';
import { KEY_ROTATION_REFUSED, SigningKeys } from '../../src/events/keys.js';
import type { PushResult } from '../../src/events/push.js';
import { MemoryStore } from '../../src/store/memory/index.js';
import type { ReceiverRecord, RevocationEvent } from '../../src/store/store.js';
import { ManualTimers } from '../helpers/timers.js';
import { GroupingMemoryStore } from './grouping-store.js';
import { manualDeliverer, TEST_ISSUER } from './manual-deliverer.js';
import { TestReceiver } from './receiver.js';
import { recordedEndpoint } from '../../src/engine/push-destination.js';

/**
 * The push loop's policy over the in-memory store, with a push function the test controls, a
 * manual clock and timers that fire when it is advanced: retries and backoff without waiting.
 */
const T0 = Date.UTC(2026, 0, 1);

function receiver(id: string): ReceiverRecord {
  return { id, delivery: 'push', endpointUrl: `https://${id}.example.test/events`, authorization: null, caPem: null, clientId: null, audience: id, createdAt: T0, retentionMs: 86_400_000 };
}

function event(n: number, at = T0): RevocationEvent {
  return { id: `00000000-0000-7000-8000-${String(n).padStart(12, '0')}`, at, reason: 'revoked', scope: 'client', clientId: `c${n}` };
}

async function setUp(answers: (set: string, r: ReceiverRecord) => PushResult, store: MemoryStore = new MemoryStore()) {
  const timers = new ManualTimers(new ManualClock(T0));
  const clock = timers.clock;
  const sent: { receiver: string; event: string }[] = [];
  await store.createReceiver(receiver('a'), {});
  await store.createReceiver(receiver('b'), {});
  const deliverer = manualDeliverer(store, timers, {
    push: async (r, set) => {
      sent.push({ receiver: r.id, event: JSON.parse(Buffer.from(set.split('.')[1]!, 'base64url').toString()).jti });
      return answers(set, r);
    },
  });
  return { store, deliverer, sent, emit: (n: number) => emit(store, n, clock.now()), timers, advance: (ms: number) => clock.advance(ms), now: () => clock.now() };
}

/** Event `n` into the outbox, the way a revocation writes it (client `c<n>` deleted). */
async function emit(store: MemoryStore, n: number, now: number): Promise<void> {
  await store.createClient({ id: `c${n}`, name: 'c', secretHash: null, scope: '', orgId: '', audience: '', accessTtlMs: null, refreshTtlMs: null, createdAt: now, secretUpdatedAt: now, redirectUris: [], grantTypes: ['refresh_token'], loginProvider: false, requireDpop: false }, {});
  expect(await store.deleteClient(`c${n}`, { event: event(n, now) })).toBe(true);
}

describe('retry policy', () => {
  it('waits 1 s, doubling to 4 s, ±20 %; gives up at the receiver\'s retention; a 400 with an error is dead at once', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 100].map(retryDelay)).toEqual([1_000, 2_000, 4_000, 4_000, 4_000, 4_000, 4_000, 4_000, 4_000]);
    const r = failureOutcome({ kind: 'failed', error: 'HTTP 503' }, 0, T0, () => 0.5);
    expect(r).toEqual({ kind: 'retry', at: T0, retryAt: T0 + 1_000, error: 'HTTP 503' });
    expect(failureOutcome({ kind: 'failed', error: 'x' }, 3, T0, () => 0)).toMatchObject({ retryAt: T0 + 0.8 * 4_000 });
    expect(failureOutcome({ kind: 'failed', error: 'x' }, 3, T0, () => 1)).toMatchObject({ retryAt: T0 + 1.2 * 4_000 });
    expect(failureOutcome({ kind: 'rejected', error: 'HTTP 400 invalid_key' }, 0, T0)).toEqual({ kind: 'dead', at: T0, error: 'HTTP 400 invalid_key' });
    // The bound is a time (event time + retention), not a count of attempts: however many failed before.
    expect(failureOutcome({ kind: 'failed', error: 'x' }, 50_000, T0, Math.random, T0 + 1).kind).toBe('retry');
    expect(failureOutcome({ kind: 'failed', error: 'x' }, 0, T0 + 1, Math.random, T0 + 1)).toEqual({ kind: 'dead', at: T0 + 1, error: 'x' });
  });

  it('a push receiver\'s failing delivery becomes a dead letter at its retention (here 1 minute), not after a fixed day', async () => {
    const s = await setUp(() => ({ kind: 'failed', error: 'HTTP 503' }));
    await s.store.updateReceiver('a', { retentionMs: 60_000 }, {});
    await s.emit(1);
    const a = async () => (await s.store.listReceivers()).find((r) => r.id === 'a')!;
    while (s.now() < T0 + 60_000 && (await a()).dead === 0) {
      await s.deliverer.tick();
      s.advance(MAX_RETRY_MS * 1.25);
    }
    expect(await a()).toMatchObject({ pending: 1, dead: 0 });
    await s.deliverer.tick();
    // Given up by the deliverer itself (its error, not housekeeping's), at the first failure past the retention.
    expect(await a()).toMatchObject({ pending: 0, dead: 1, lastError: 'HTTP 503' });
  });
});

describe('PushDeliverer', () => {
  it('housekeeping purges in batches until one finds fewer than a batch, at most PURGE_MAX_BATCHES a round', async () => {
    const s = await setUp(() => ({ kind: 'accepted' }));
    const calls: number[] = [];
    let purgeable = 2 * PURGE_BATCH + 7;
    s.store.purgeDeliveredEvents = async (limit: number) => {
      calls.push(limit);
      const n = Math.min(limit, purgeable);
      purgeable -= n;
      return n;
    };
    await s.deliverer.tick();
    expect(calls).toEqual([PURGE_BATCH, PURGE_BATCH, PURGE_BATCH]);
    expect(purgeable).toBe(0);
    // Not again before the next round of housekeeping; then bounded, whatever is left.
    await s.deliverer.tick();
    expect(calls).toHaveLength(3);
    purgeable = Infinity;
    s.advance(60_000);
    await s.deliverer.tick();
    expect(calls).toHaveLength(3 + PURGE_MAX_BATCHES);
  });

  it('housekeeping: a refused rotation says the old key signs on, and the purge runs all the same; keys just checked at start wait a minute', async () => {
    const store = new MemoryStore();
    const timers = new ManualTimers(new ManualClock(T0));
    const clock = timers.clock;
    const logged: [string, string][] = [];
    const keys = new SigningKeys(store, () => clock.now());
    const first = await keys.ensureCurrent();
    let purges = 0;
    store.purgeDeliveredEvents = async () => (purges++, 0);
    const deliverer = manualDeliverer(store, timers, { keys, log: (level, _fields, message) => logged.push([level, message]) });
    clock.advance(KEY_ROTATION_MS);
    const addKey = vi.spyOn(store, 'addSigningKey').mockRejectedValue(new Error('the store is unavailable'));
    // Started as serve does, right after its own check: the first round purges but leaves the keys.
    deliverer.start({ keysCheckedAt: clock.now() });
    await timers.advance(0);
    expect(purges).toBe(1);
    expect(addKey).not.toHaveBeenCalled();
    expect(logged).toEqual([]);
    // Nothing more within the minute, however many rounds run.
    await timers.advance(60_000 - CLAIM_INTERVAL_MS);
    expect(purges).toBe(1);
    expect(addKey).not.toHaveBeenCalled();
    // A minute on, in the running loop: the rotation is tried, refused and said so; the purge runs too.
    await timers.advance(CLAIM_INTERVAL_MS);
    await deliverer.stop();
    expect(addKey).toHaveBeenCalledTimes(1);
    expect(purges).toBe(2);
    expect(logged).toEqual([['error', KEY_ROTATION_REFUSED]]);
    expect((await keys.current()).kid).toBe(first);
    // The store takes it again: the next round rotates.
    addKey.mockRestore();
    clock.advance(60_000);
    await deliverer.tick();
    expect((await keys.current()).kid).not.toBe(first);
    expect(logged).toHaveLength(1);
  });

  it('delivers each receiver its events in order, and nothing twice', async () => {
    const s = await setUp(() => ({ kind: 'accepted' }));
    for (let n = 1; n <= 3; n++) await s.emit(n);
    await s.deliverer.tick();
    expect(s.sent.filter((x) => x.receiver === 'a').map((x) => x.event)).toEqual([event(1).id, event(2).id, event(3).id]);
    expect(s.sent.filter((x) => x.receiver === 'b')).toHaveLength(3);
    await s.deliverer.tick();
    expect(s.sent).toHaveLength(6);
    expect((await s.store.listReceivers()).map((r) => r.pending)).toEqual([0, 0]);
  });

  it('one SET per delivery: a delivery of several events is one SET carrying all their revocations, settled as one', async () => {
    let failFirst = true;
    const sets: Record<string, any>[] = []; // eslint-disable-line @typescript-eslint/no-explicit-any
    const s = await setUp((set, r) => {
      if (r.id !== 'a') return { kind: 'accepted' };
      if (failFirst) {
        failFirst = false;
        return { kind: 'failed', error: 'HTTP 503' };
      }
      sets.push(JSON.parse(Buffer.from(set.split('.')[1]!, 'base64url').toString()));
      return { kind: 'accepted' };
    }, new GroupingMemoryStore(3));
    for (let n = 1; n <= 7; n++) await s.emit(n);
    await s.deliverer.tick();
    // a: its first SET (events 1–3) failed, and holds the rest back; b: all 7 events in 3 SETs.
    expect(s.sent.filter((x) => x.receiver === 'a').map((x) => x.event)).toEqual([event(1).id]);
    expect(s.sent.filter((x) => x.receiver === 'b').map((x) => x.event)).toEqual([event(1).id, event(4).id, event(7).id]);
    expect((await s.store.listReceivers()).map((r) => [r.id, r.pending])).toEqual([
      ['a', 7],
      ['b', 0],
    ]);
    s.advance(2_000);
    await s.deliverer.tick();
    expect(sets.map((c) => c.jti)).toEqual([event(1).id, event(4).id, event(7).id]);
    expect(sets.map((c) => c.events['urn:tokenctl:secevent:tokens-revoked'].revocations.map((r: { client_id: string }) => r.client_id))).toEqual([['c1', 'c2', 'c3'], ['c4', 'c5', 'c6'], ['c7']]);
    // Several revocations: the SET's originating change (its txn) is the subject; one: its own.
    expect(sets.map((c) => c.sub_id)).toEqual([{ format: 'opaque', id: event(1).id }, { format: 'opaque', id: event(4).id }, { format: 'opaque', id: 'c7' }]);
    expect(sets.map((c) => c.txn)).toEqual([event(1).id, event(4).id, event(7).id]);
    expect((await s.store.listReceivers()).map((r) => r.pending)).toEqual([0, 0]);
  });

  it('a failure holds the receiver\'s later events back until its retry succeeds; other receivers go on', async () => {
    let aDown = true;
    const s = await setUp((_set, r) => (r.id === 'a' && aDown ? { kind: 'failed', error: 'HTTP 503' } : { kind: 'accepted' }));
    await s.emit(1);
    await s.emit(2);
    await s.deliverer.tick();
    expect(s.sent.filter((x) => x.receiver === 'a')).toHaveLength(1);
    expect(s.sent.filter((x) => x.receiver === 'b')).toHaveLength(2);
    // Not due yet: nothing is sent.
    await s.deliverer.tick();
    expect(s.sent.filter((x) => x.receiver === 'a')).toHaveLength(1);
    aDown = false;
    s.advance(1_300);
    await s.deliverer.tick();
    expect(s.sent.filter((x) => x.receiver === 'a').map((x) => x.event)).toEqual([event(1).id, event(1).id, event(2).id]);
    expect((await s.store.listReceivers())[0]).toMatchObject({ pending: 0, lastError: 'HTTP 503' });
  });

  it('a SET the receiver rejects (400 with an error) becomes a dead letter, and the next events go on; receiver retry requeues it', async () => {
    const s = await setUp((set) => (JSON.parse(Buffer.from(set.split('.')[1]!, 'base64url').toString()).jti === event(1).id ? { kind: 'rejected', error: 'HTTP 400 invalid_audience' } : { kind: 'accepted' }));
    await s.emit(1);
    await s.emit(2);
    await s.deliverer.tick();
    const [a] = await s.store.listReceivers();
    expect(a).toMatchObject({ pending: 0, dead: 1, lastError: 'HTTP 400 invalid_audience' });
    expect(await s.store.retryDead('a', s.now(), {})).toBe(1);
    expect((await s.store.listReceivers())[0]).toMatchObject({ pending: 1, dead: 0 });
  });

  it('start and stop: the loop runs on its own, a round every interval, and stops cleanly', async () => {
    const s = await setUp(() => ({ kind: 'accepted' }));
    await s.emit(1);
    s.deliverer.start();
    await s.timers.advance(0);
    expect(s.sent).toHaveLength(2);
    // Rounds go on: a new event goes out within one interval, and nothing twice.
    await s.timers.advance(10 * CLAIM_INTERVAL_MS);
    expect(s.sent).toHaveLength(2);
    await s.emit(2);
    await s.timers.advance(CLAIM_INTERVAL_MS);
    expect(s.sent).toHaveLength(4);
    await s.deliverer.stop();
    expect(s.timers.size).toBe(0);
    await s.emit(3);
    await s.timers.advance(60_000);
    expect(s.sent).toHaveLength(4);
  });
});

describe('a receiver down for a minute, over HTTPS', () => {
  it('gets every event once when it is back, the retried one first; a retry is at most 4 s + 20 % after the last', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tokenctl-deliverer-'));
    const rs = await TestReceiver.start(dir);
    try {
      const store = new MemoryStore();
      const timers = new ManualTimers(new ManualClock(T0));
      const clock = timers.clock;
      await store.createReceiver({ ...receiver('gw'), endpointUrl: recordedEndpoint(new URL(rs.url), true), caPem: readFileSync(rs.caFile, 'utf8'), authorization: 'Bearer for-tests' }, {});
      // The real push (pushSet) to a real receiver; only the waits between attempts are the clock's.
      const warned: Record<string, unknown>[] = [];
      const log = (level: string, fields: Record<string, unknown>) => void (level === 'warn' && warned.push(fields));
      const deliverer = manualDeliverer(store, timers, { log });
      await rs.down();
      deliverer.start();
      const ids: string[] = [];
      for (let n = 1; n <= 6; n++) {
        await emit(store, n, clock.now());
        ids.push(event(n).id);
        // Spread over the minute: some events wait behind a delivery already retried for a while.
        await timers.advance(n === 3 ? 30_000 : 200);
      }
      // Just short of a minute after the first failure: a push still in flight when the advance
      // ends fails at the clock's last reading, which must stay inside the minute it is logged once in.
      await timers.advance(T0 + 59_000 - clock.now());
      const [down] = await store.listReceivers();
      expect(down).toMatchObject({ pending: 6, dead: 0 });
      expect(down!.lastError).toMatch(/ECONNREFUSED/);
      expect(rs.arrived).toBe(0);
      // Retried every few seconds, logged once in that minute.
      expect(warned).toHaveLength(1);
      await rs.up();
      await timers.advance(MAX_RETRY_MS * 1.2);
      await deliverer.stop();
      // The retried SET alone first, then the rest, several at once: in any order.
      expect(rs.eventIds()[0]).toBe(ids[0]);
      expect([...rs.eventIds()].sort()).toEqual(ids);
      expect(rs.duplicates()).toBe(0);
      expect(rs.accepted.every((a) => a.authorization === 'Bearer for-tests' && a.contentType === 'application/secevent+jwt')).toBe(true);
      expect((await store.listReceivers())[0]).toMatchObject({ pending: 0, dead: 0 });
    } finally {
      await rs.down();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('a receiver that never answers', () => {
  it('holds back its own events only: the other receiver gets each of its events in the next rounds', async () => {
    const store = new MemoryStore();
    await store.createReceiver(receiver('stalled'), {});
    await store.createReceiver(receiver('good'), {});
    let release: () => void = () => undefined;
    const stalled = new Promise<void>((resolve) => (release = resolve));
    const got: string[] = [];
    // Real timers, rounds every 10 ms: what is asserted is that a round does not wait for a push.
    const deliverer = new PushDeliverer({
      store,
      keys: new SigningKeys(store, () => Date.now()),
      issuer: () => TEST_ISSUER,
      intervalMs: 10,
      push: async (r, set) => {
        if (r.id === 'stalled') await stalled;
        else got.push(JSON.parse(Buffer.from(set.split('.')[1]!, 'base64url').toString()).jti);
        return { kind: 'accepted' };
      },
    });
    deliverer.start();
    try {
      for (let n = 1; n <= 3; n++) {
        await emit(store, n, Date.now());
        // Each event reaches the good receiver while the stalled one still holds its first push.
        await vi.waitFor(() => expect(got).toContain(event(n).id), { timeout: 1000, interval: 5 });
      }
      expect((await store.listReceivers()).find((r) => r.id === 'stalled')).toMatchObject({ pending: 3 });
    } finally {
      release();
      await deliverer.stop();
    }
  });
});
