import Database from 'better-sqlite3';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RevocationEvent } from '../../src/store/events.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { T0, makeClient, makeGrant, makeToken } from '../helpers/records.js';
import { delivery, makeEvent, makePollReceiver, makePushReceiver } from './events-contract.js';

/*
 * The SQLite outbox writes the events of the revocations that commit together (one group commit:
 * the write steps of one event-loop turn) as ONE outbox row with one delivery per receiver: one
 * SET per receiver for a burst of revocations. The contract (events-contract.ts) holds what every
 * store does; this is what SQLite does beyond it.
 */

const AT = T0 + 60_000;

/** The store's private write path and event collector, to run a step that fails after its event. */
interface Internals {
  write<T>(step: () => T): Promise<T>;
  events: { emitIf<T extends boolean | number>(changed: T, event: RevocationEvent | undefined): T };
}

describe('SqliteStore: the events of one group commit in one delivery', () => {
  let dir: string;
  let file: string;
  let store: SqliteStore;
  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tokenctl-event-batches-'));
    file = path.join(dir, 'tokens.db');
    store = await SqliteStore.open(file);
    await store.createClient(makeClient({ id: 'client-1' }));
    await store.createClient(makeClient({ id: 'client-2', createdAt: T0 + 1 }));
  });
  afterEach(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const tokens = async (n: number) => {
    const list = Array.from({ length: n }, () => makeToken({ clientId: 'client-1', username: 'alice' }));
    await store.insertTokens(list);
    return list;
  };
  /** The outbox rows' payloads, parsed, oldest first. */
  const payloads = () => {
    const db = new Database(file, { readonly: true });
    try {
      return (db.prepare('SELECT payload FROM security_events ORDER BY seq').pluck().all() as string[]).map((p) => JSON.parse(p) as unknown);
    } finally {
      db.close();
    }
  };

  it('revocations of every kind called in one turn: one outbox row, one delivery per receiver, the events in call order', async () => {
    await store.createReceiver(makePollReceiver('poll-1', 'client-1'));
    await store.createReceiver(makePushReceiver('push-1'));
    const [t1, t2] = await tokens(2);
    const g = makeGrant({ clientId: 'client-1', username: 'bob' });
    await store.insertTokens([g.refresh, g.access]);
    await store.insertTokens([makeToken({ clientId: 'client-1', username: 'carol' })]);
    const events = [
      makeEvent({ jti: t1!.jti }),
      makeEvent({ scope: 'grant', grantId: g.refresh.grantId }),
      makeEvent({ jti: t2!.jti }),
      makeEvent({ scope: 'user', username: 'carol', jti: undefined, tokenType: undefined, grantId: undefined }),
      makeEvent({ scope: 'client', reason: 'client_deleted', clientId: 'client-2', jti: undefined, tokenType: undefined, grantId: undefined, username: undefined }),
    ];
    const answers = await Promise.all([
      store.revokeToken(t1!.jti, AT, false, undefined, events[0]),
      store.revokeGrant(g.refresh.grantId, AT, undefined, events[1]),
      store.revokeToken('no-such-jti', AT, false, undefined, makeEvent()), // nothing changed: no event
      store.revokeToken(t2!.jti, AT, false, undefined, events[2]),
      store.revokeBulk({ username: 'carol' }, AT, 100, undefined, undefined, events[3]),
      store.deleteClient('client-2', events[4]),
    ]);
    expect(answers).toEqual([true, 2, false, true, { revoked: 1, more: false, resume: expect.any(String) }, true]);
    const one = { id: events[0]!.id, events, attempts: 0 };
    expect(await store.pendingDeliveries('poll-1', 10)).toEqual([{ receiverId: 'poll-1', ...one }]);
    expect(await store.pendingDeliveries('push-1', 10)).toEqual([{ receiverId: 'push-1', ...one }]);
    // Each event as a row of its members in a fixed order, absent ones null.
    expect(payloads()).toEqual([events.map((e) => [e.id, e.at, e.reason, e.scope, e.jti ?? null, e.tokenType ?? null, e.grantId ?? null, e.username ?? null, e.clientId ?? null])]);
    expect(await store.listReceivers()).toMatchObject([
      { id: 'poll-1', pending: 1, oldestPendingAt: events[0]!.at },
      { id: 'push-1', pending: 1, oldestPendingAt: events[0]!.at },
    ]);
  });

  it('reads the outbox rows earlier builds wrote: one event object, or an array of event objects', async () => {
    await store.createReceiver(makePollReceiver('poll-1', 'client-1'));
    const [t] = await tokens(1);
    const mine = makeEvent({ jti: t!.jti });
    await store.revokeToken(t!.jti, AT, false, undefined, mine);
    const single = makeEvent({ scope: 'user', username: 'carol', jti: undefined, tokenType: undefined, grantId: undefined });
    const pair = [makeEvent(), makeEvent({ scope: 'grant', grantId: 'g-1' })];
    const db = new Database(file);
    try {
      const insert = db.prepare("INSERT INTO security_events (id, at, payload, refs) VALUES (?, ?, ?, 1)");
      const fan = db.prepare("INSERT INTO event_deliveries (receiver_id, event_seq, state, attempts, next_attempt_at) VALUES ('poll-1', ?, 'pending', 0, ?)");
      fan.run(insert.run(single.id, single.at, JSON.stringify(single)).lastInsertRowid, single.at);
      fan.run(insert.run(pair[0]!.id, pair[0]!.at, JSON.stringify(pair)).lastInsertRowid, pair[0]!.at);
    } finally {
      db.close();
    }
    expect(await store.pendingDeliveries('poll-1', 10)).toEqual([
      delivery('poll-1', mine, 0),
      delivery('poll-1', single, 0),
      { receiverId: 'poll-1', id: pair[0]!.id, events: pair, attempts: 0 },
    ]);
  });

  it('with mergeUpTo, consecutive rows are one delivery FIRST..LAST of up to that many events, acked as one and never past LAST', async () => {
    await store.createReceiver(makePollReceiver('poll-1', 'client-1'));
    await store.createReceiver(makePollReceiver('poll-2', 'client-2'));
    const list = await tokens(7);
    const events = list.map((t) => makeEvent({ jti: t.jti }));
    // Five commits: [0, 1], [2], [3, 4], [5], [6].
    await Promise.all([0, 1].map((i) => store.revokeToken(list[i]!.jti, AT, false, undefined, events[i])));
    await store.revokeToken(list[2]!.jti, AT, false, undefined, events[2]);
    await Promise.all([3, 4].map((i) => store.revokeToken(list[i]!.jti, AT, false, undefined, events[i])));
    await store.revokeToken(list[5]!.jti, AT, false, undefined, events[5]);
    const merged = await store.pendingDeliveries('poll-1', 10, 4);
    expect(merged).toEqual([
      { receiverId: 'poll-1', id: `${events[0]!.id}..${events[2]!.id}`, events: events.slice(0, 3), attempts: 0 },
      { receiverId: 'poll-1', id: `${events[3]!.id}..${events[5]!.id}`, events: events.slice(3, 6), attempts: 0 },
    ]);
    expect(await store.pendingDeliveries('poll-1', 1, 4)).toEqual(merged.slice(0, 1));
    // Without mergeUpTo, one delivery per commit, as before.
    expect((await store.pendingDeliveries('poll-1', 10)).map((d) => d.events.length)).toEqual([2, 1, 2, 1]);
    // A later commit, then the ack of the second merged delivery: the later one stays.
    await store.revokeToken(list[6]!.jti, AT, false, undefined, events[6]);
    expect(await store.ackDeliveries('poll-1', [merged[1]!.id], AT + 1)).toBe(2);
    expect((await store.pendingDeliveries('poll-1', 10, 4)).map((d) => d.events)).toEqual([[...events.slice(0, 3), events[6]]]);
    // Acked for one receiver only; a second ack of the same id takes nothing more.
    expect(await store.ackDeliveries('poll-1', [merged[0]!.id, merged[1]!.id], AT + 2)).toBe(2);
    expect((await store.pendingDeliveries('poll-1', 10, 4)).map((d) => d.id)).toEqual([events[6]!.id]);
    expect((await store.pendingDeliveries('poll-2', 10, 100)).map((d) => d.events)).toEqual([events]);
    // Once its last row is purged, a late ack of a range deletes nothing, whatever came since.
    expect(await store.ackDeliveries('poll-2', [(await store.pendingDeliveries('poll-2', 10, 100))[0]!.id], AT + 3)).toBe(5);
    expect(await store.purgeDeliveredEvents(100)).toBe(4);
    expect(await store.ackDeliveries('poll-1', [`${events[0]!.id}..${events[5]!.id}`, 'x..y', '..', `${events[6]!.id}..`], AT + 4)).toBe(0);
    expect((await store.pendingDeliveries('poll-1', 10, 4)).map((d) => d.id)).toEqual([events[6]!.id]);
  });

  it('a delivery settles, acks and purges as one: every event in it goes at once', async () => {
    await store.createReceiver(makePollReceiver('poll-1', 'client-1'));
    await store.createReceiver(makePushReceiver('push-1'));
    const list = await tokens(4);
    const events = list.map((t) => makeEvent({ jti: t.jti }));
    await Promise.all(list.map((t, i) => store.revokeToken(t.jti, AT, false, undefined, events[i])));
    const later = makeEvent({ jti: (await tokens(1))[0]!.jti });
    await store.revokeToken(later.jti!, AT, false, undefined, later);

    const [claimed] = await store.claimPushReceivers('node-a', AT, 30_000, 10, 10);
    expect(claimed!.deliveries.map((d) => d.events.length)).toEqual([4, 1]);
    // Naming a later event of the delivery settles nothing: a delivery is named by its first event.
    await store.settleDelivery('node-a', 'push-1', events[1]!.id, { kind: 'delivered', at: AT + 1 });
    expect((await store.listReceivers()).find((r) => r.id === 'push-1')?.pending).toBe(2);
    await store.settleDelivery('node-a', 'push-1', events[0]!.id, { kind: 'delivered', at: AT + 1 });
    expect(await store.pendingDeliveries('push-1', 10)).toEqual([delivery('push-1', later, 0)]);

    expect(await store.ackDeliveries('poll-1', [events[2]!.id], AT + 2)).toBe(0);
    expect(await store.ackDeliveries('poll-1', [events[0]!.id], AT + 2)).toBe(1);
    expect(await store.pendingDeliveries('poll-1', 10)).toEqual([delivery('poll-1', later, 0)]);
    expect(await store.purgeDeliveredEvents(100)).toBe(1); // the one row of four events
    expect(payloads()).toHaveLength(1);
  });

  it('a step that fails after its event leaves nothing of it; the steps beside it keep theirs', async () => {
    await store.createReceiver(makePollReceiver('poll-1', 'client-1'));
    const [t1, t2] = await tokens(2);
    const [e1, e2, lost] = [makeEvent({ jti: t1!.jti }), makeEvent({ jti: t2!.jti }), makeEvent()];
    const internals = store as unknown as Internals;
    const results = await Promise.allSettled([
      store.revokeToken(t1!.jti, AT, false, undefined, e1),
      internals.write(() => {
        internals.events.emitIf(true, lost);
        throw new Error('this step fails after its event');
      }),
      store.revokeToken(t2!.jti, AT, false, undefined, e2),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(await store.pendingDeliveries('poll-1', 10)).toEqual([{ receiverId: 'poll-1', id: e1.id, events: [e1, e2], attempts: 0 }]);
    // Nor does it linger for the next transaction.
    const [t3] = await tokens(1);
    const e3 = makeEvent({ jti: t3!.jti });
    await store.revokeToken(t3!.jti, AT, false, undefined, e3);
    expect((await store.pendingDeliveries('poll-1', 10)).map((d) => d.events)).toEqual([[e1, e2], [e3]]);
  });

  it('a batch whose commit fails writes none of its events, and leaves none to the next one', async () => {
    await store.createReceiver(makePollReceiver('poll-1', 'client-1'));
    const [t1, t2] = await tokens(2);
    // Another connection holds the write lock past the store's busy timeout: the commit fails.
    const other = new Database(file);
    other.pragma('busy_timeout = 0');
    const e1 = makeEvent({ jti: t1!.jti });
    const internals = store as unknown as Internals & { db: Database.Database };
    const timeout = internals.db.pragma('busy_timeout', { simple: true }) as number;
    internals.db.pragma('busy_timeout = 50');
    try {
      other.prepare('BEGIN IMMEDIATE').run();
      await expect(store.revokeToken(t1!.jti, AT, false, undefined, e1)).rejects.toThrow();
      other.prepare('ROLLBACK').run();
    } finally {
      internals.db.pragma(`busy_timeout = ${timeout}`);
      other.close();
    }
    expect((await store.findTokenByJti(t1!.jti))?.revokedAt).toBeNull();
    const e2 = makeEvent({ jti: t2!.jti });
    await store.revokeToken(t2!.jti, AT, false, undefined, e2);
    expect(await store.pendingDeliveries('poll-1', 10)).toEqual([delivery('poll-1', e2, 0)]);
  });

  it('writes nothing for revocations in one turn while no receiver is registered', async () => {
    const list = await tokens(5);
    await Promise.all(list.map((t) => store.revokeToken(t.jti, AT, false, undefined, makeEvent({ jti: t.jti }))));
    expect(payloads()).toEqual([]);
    await store.createReceiver(makePollReceiver('poll-1', 'client-1'));
    expect(await store.pendingDeliveries('poll-1', 10)).toEqual([]);
  });
});
