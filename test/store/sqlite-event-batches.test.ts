import Database from 'better-sqlite3';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RevocationEvent } from '../../src/store/event-records.js';
import { setClaims, setClaimsJson } from '../../src/events/set.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { APPLICATION_ID, LATEST_SCHEMA_VERSION, MIGRATIONS } from '../../src/store/sqlite/migrations.js';
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
    await store.createClient(makeClient({ id: 'client-1' }), {});
    await store.createClient(makeClient({ id: 'client-2', createdAt: T0 + 1 }), {});
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
  /** The outbox rows' payloads, oldest first. */
  const payloads = () => {
    const db = new Database(file, { readonly: true });
    try {
      return db.prepare('SELECT payload FROM security_events ORDER BY seq').pluck().all() as string[];
    } finally {
      db.close();
    }
  };

  it('revocations of every kind called in one turn: one outbox row, one delivery per receiver, the events in call order', async () => {
    await store.createReceiver(makePollReceiver('poll-1', 'client-1'), {});
    await store.createReceiver(makePushReceiver('push-1'), {});
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
      store.revokeToken(t1!.jti, AT, false, { event: events[0] }),
      store.revokeGrant(g.refresh.grantId, AT, { event: events[1] }),
      store.revokeToken('no-such-jti', AT, false, { event: makeEvent() }), // nothing changed: no event
      store.revokeToken(t2!.jti, AT, false, { event: events[2] }),
      store.revokeBulk({ username: 'carol' }, AT, 100, undefined, { event: events[3] }),
      store.deleteClient('client-2', { event: events[4] }),
    ]);
    expect(answers).toEqual([true, 2, false, true, { revoked: 1, more: false, resume: expect.any(String) }, true]);
    const one = { id: events[0]!.id, events, attempts: 0 };
    expect(await store.pendingDeliveries('poll-1', 10)).toEqual([{ receiverId: 'poll-1', ...one }]);
    expect(await store.pendingDeliveries('push-1', 10)).toEqual([{ receiverId: 'push-1', ...one }]);
    // Format 3: `3`, the count and the latest time, the ids, then the revocations as a SET tells them.
    // (`reason` left out when it is `revoked`, `token_type` on a `token` event: docs/events.md "The SET".)
    const claims = events.map((e) => ({ scope: e.scope, reason: e.reason === 'revoked' ? undefined : e.reason, jti: e.jti, token_type: e.scope === 'token' ? undefined : e.tokenType, grant_id: e.grantId, username: e.username, client_id: e.clientId, at: e.at }));
    expect(payloads()).toEqual([`3\n5 ${Math.max(...events.map((e) => e.at))}\n${JSON.stringify(events.map((e) => e.id))}\n${JSON.stringify(claims).slice(1, -1)}`]);
    expect(await store.listReceivers()).toMatchObject([
      { id: 'poll-1', pending: 1, oldestPendingAt: events[0]!.at },
      { id: 'push-1', pending: 1, oldestPendingAt: events[0]!.at },
    ]);
  });

  it('reads the outbox rows earlier builds wrote: one event object, an array of event objects, or an array of event rows', async () => {
    await store.createReceiver(makePollReceiver('poll-1', 'client-1'), {});
    const [t] = await tokens(1);
    const mine = makeEvent({ jti: t!.jti });
    await store.revokeToken(t!.jti, AT, false, { event: mine });
    const single = makeEvent({ scope: 'user', username: 'carol', jti: undefined, tokenType: undefined, grantId: undefined });
    const pair = [makeEvent(), makeEvent({ scope: 'grant', grantId: 'g-1' })];
    const rows = [makeEvent(), makeEvent({ scope: 'client', reason: 'client_deleted', jti: undefined, tokenType: undefined, grantId: undefined, username: undefined })];
    const asRow = (e: RevocationEvent) => [e.id, e.at, e.reason, e.scope, e.jti ?? null, e.tokenType ?? null, e.grantId ?? null, e.username ?? null, e.clientId ?? null];
    const db = new Database(file);
    try {
      const insert = db.prepare("INSERT INTO security_events (id, at, payload) VALUES (?, ?, ?)");
      // A poll receiver's pending rows are those after its cursor: no delivery row to write.
      insert.run(single.id, single.at, JSON.stringify(single));
      insert.run(pair[0]!.id, pair[0]!.at, JSON.stringify(pair));
      insert.run(rows[0]!.id, rows[0]!.at, JSON.stringify(rows.map(asRow)));
    } finally {
      db.close();
    }
    expect(await store.pendingDeliveries('poll-1', 10)).toEqual([
      delivery('poll-1', mine, 0),
      delivery('poll-1', single, 0),
      { receiverId: 'poll-1', id: pair[0]!.id, events: pair, attempts: 0 },
      { receiverId: 'poll-1', id: rows[0]!.id, events: rows, attempts: 0 },
    ]);
    // Merged with rows of the current format, they are one delivery of every event in order.
    expect(await store.pendingDeliveries('poll-1', 10, 100)).toEqual([
      { receiverId: 'poll-1', id: `${mine.id}..${rows[0]!.id}`, events: [mine, single, ...pair, ...rows], attempts: 0 },
    ]);
  });

  it('with mergeUpTo, consecutive rows are one delivery FIRST..LAST of up to that many events, acked as one and never past LAST', async () => {
    await store.createReceiver(makePollReceiver('poll-1', 'client-1'), {});
    await store.createReceiver(makePollReceiver('poll-2', 'client-2'), {});
    const list = await tokens(7);
    const events = list.map((t) => makeEvent({ jti: t.jti }));
    // Five commits: [0, 1], [2], [3, 4], [5], [6].
    await Promise.all([0, 1].map((i) => store.revokeToken(list[i]!.jti, AT, false, { event: events[i] })));
    await store.revokeToken(list[2]!.jti, AT, false, { event: events[2] });
    await Promise.all([3, 4].map((i) => store.revokeToken(list[i]!.jti, AT, false, { event: events[i] })));
    await store.revokeToken(list[5]!.jti, AT, false, { event: events[5] });
    const merged = await store.pendingDeliveries('poll-1', 10, 4);
    expect(merged).toEqual([
      { receiverId: 'poll-1', id: `${events[0]!.id}..${events[2]!.id}`, events: events.slice(0, 3), attempts: 0 },
      { receiverId: 'poll-1', id: `${events[3]!.id}..${events[5]!.id}`, events: events.slice(3, 6), attempts: 0 },
    ]);
    expect(await store.pendingDeliveries('poll-1', 1, 4)).toEqual(merged.slice(0, 1));
    // Without mergeUpTo, one delivery per commit, as before.
    expect((await store.pendingDeliveries('poll-1', 10)).map((d) => d.events.length)).toEqual([2, 1, 2, 1]);
    // A later commit, then the ack of the second merged delivery: the later one stays.
    await store.revokeToken(list[6]!.jti, AT, false, { event: events[6] });
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
    await store.createReceiver(makePollReceiver('poll-1', 'client-1'), {});
    await store.createReceiver(makePushReceiver('push-1'), {});
    const list = await tokens(4);
    const events = list.map((t) => makeEvent({ jti: t.jti }));
    await Promise.all(list.map((t, i) => store.revokeToken(t.jti, AT, false, { event: events[i] })));
    const later = makeEvent({ jti: (await tokens(1))[0]!.jti });
    await store.revokeToken(later.jti!, AT, false, { event: later });

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
    await store.createReceiver(makePollReceiver('poll-1', 'client-1'), {});
    const [t1, t2] = await tokens(2);
    const [e1, e2, lost] = [makeEvent({ jti: t1!.jti }), makeEvent({ jti: t2!.jti }), makeEvent()];
    const internals = store as unknown as Internals;
    const results = await Promise.allSettled([
      store.revokeToken(t1!.jti, AT, false, { event: e1 }),
      internals.write(() => {
        internals.events.emitIf(true, lost);
        throw new Error('this step fails after its event');
      }),
      store.revokeToken(t2!.jti, AT, false, { event: e2 }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(await store.pendingDeliveries('poll-1', 10)).toEqual([{ receiverId: 'poll-1', id: e1.id, events: [e1, e2], attempts: 0 }]);
    // Nor does it linger for the next transaction.
    const [t3] = await tokens(1);
    const e3 = makeEvent({ jti: t3!.jti });
    await store.revokeToken(t3!.jti, AT, false, { event: e3 });
    expect((await store.pendingDeliveries('poll-1', 10)).map((d) => d.events)).toEqual([[e1, e2], [e3]]);
  });

  it('a batch whose commit fails writes none of its events, and leaves none to the next one', async () => {
    await store.createReceiver(makePollReceiver('poll-1', 'client-1'), {});
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
      await expect(store.revokeToken(t1!.jti, AT, false, { event: e1 })).rejects.toThrow();
      other.prepare('ROLLBACK').run();
    } finally {
      internals.db.pragma(`busy_timeout = ${timeout}`);
      other.close();
    }
    expect((await store.findTokenByJti(t1!.jti))?.revokedAt).toBeNull();
    const e2 = makeEvent({ jti: t2!.jti });
    await store.revokeToken(t2!.jti, AT, false, { event: e2 });
    expect(await store.pendingDeliveries('poll-1', 10)).toEqual([delivery('poll-1', e2, 0)]);
  });

  it('writes nothing for revocations in one turn while no receiver is registered', async () => {
    const list = await tokens(5);
    await Promise.all(list.map((t) => store.revokeToken(t.jti, AT, false, { event: makeEvent({ jti: t.jti }) })));
    expect(payloads()).toEqual([]);
    await store.createReceiver(makePollReceiver('poll-1', 'client-1'), {});
    expect(await store.pendingDeliveries('poll-1', 10)).toEqual([]);
  });
});

describe('SqliteStore: a poll receiver’s cursor (schema 5)', () => {
  let dir: string;
  let file: string;
  let store: SqliteStore;
  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tokenctl-poll-cursor-'));
    file = path.join(dir, 'tokens.db');
  });
  afterEach(async () => {
    await store?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const raw = <T>(fn: (db: Database.Database) => T): T => {
    const db = new Database(file);
    try {
      return fn(db);
    } finally {
      db.close();
    }
  };
  /** Revokes one token per call, one call per commit, and returns the events in order. */
  const revokeOneByOne = async (n: number) => {
    const list = Array.from({ length: n }, () => makeToken({ clientId: 'client-1', username: 'alice' }));
    await store.insertTokens(list);
    const events: RevocationEvent[] = [];
    for (const t of list) {
      const e = makeEvent({ jti: t.jti }, AT + events.length);
      await store.revokeToken(t.jti, AT, false, { event: e });
      events.push(e);
    }
    return events;
  };
  const pendingIds = async (id: string) => (await store.pendingDeliveries(id, 100)).map((d) => d.id);

  it('writes no delivery row for a poll receiver; acknowledgements out of order wait as marks until the cursor reaches them', async () => {
    store = await SqliteStore.open(file);
    await store.createClient(makeClient({ id: 'client-1' }), {});
    await store.createReceiver(makePollReceiver('poll-1', 'client-1'), {});
    const events = await revokeOneByOne(5);
    expect(raw((db) => db.prepare('SELECT count(*) FROM event_deliveries').pluck().get())).toBe(0);
    // The fourth and second first: marked, the cursor stays before the first.
    expect(await store.ackDeliveries('poll-1', [events[3]!.id, events[1]!.id], AT + 10)).toBe(2);
    expect(await pendingIds('poll-1')).toEqual([events[0]!.id, events[2]!.id, events[4]!.id]);
    expect(raw((db) => db.prepare('SELECT count(*) FROM poll_acks').pluck().get())).toBe(2);
    expect((await store.listReceivers())[0]).toMatchObject({ pending: 3, oldestPendingAt: events[0]!.at, lastDeliveredAt: AT + 10 });
    // Then the first: the cursor moves over it and the second, stops before the third; the second's mark goes.
    expect(await store.ackDeliveries('poll-1', [events[0]!.id, events[0]!.id, events[1]!.id], AT + 11)).toBe(1);
    expect(await pendingIds('poll-1')).toEqual([events[2]!.id, events[4]!.id]);
    expect(raw((db) => db.prepare('SELECT event_seq FROM poll_acks').pluck().all())).toHaveLength(1);
    expect(await store.purgeDeliveredEvents(100)).toBe(2);
    // The third: over the fourth's mark too; none is left.
    expect(await store.ackDeliveries('poll-1', [events[2]!.id], AT + 12)).toBe(1);
    expect(await pendingIds('poll-1')).toEqual([events[4]!.id]);
    expect(raw((db) => db.prepare('SELECT count(*) FROM poll_acks').pluck().get())).toBe(0);
    expect((await store.listReceivers())[0]).toMatchObject({ pending: 1, oldestPendingAt: events[4]!.at });
  });

  it('a row written after every row was purged is pending for the receiver: seqs never go back under a cursor', async () => {
    store = await SqliteStore.open(file);
    await store.createClient(makeClient({ id: 'client-1' }), {});
    await store.createReceiver(makePollReceiver('poll-1', 'client-1'), {});
    const first = await revokeOneByOne(3);
    expect(await store.ackDeliveries('poll-1', first.map((e) => e.id), AT + 10)).toBe(3);
    expect(await store.purgeDeliveredEvents(100)).toBe(3);
    expect(raw((db) => db.prepare('SELECT count(*) FROM security_events').pluck().get())).toBe(0);
    const [next] = await revokeOneByOne(1);
    expect(await pendingIds('poll-1')).toEqual([next!.id]);
    expect(raw((db) => db.prepare('SELECT seq FROM security_events').pluck().get())).toBe(4);
    // A receiver added now starts after it.
    await store.createReceiver(makePollReceiver('poll-2', 'client-1'), {});
    expect(await pendingIds('poll-2')).toEqual([]);
  });

  it('keeps strings JSON must escape, and each event’s own time, through the outbox', async () => {
    store = await SqliteStore.open(file);
    await store.createClient(makeClient({ id: 'client-1' }), {});
    await store.createReceiver(makePollReceiver('poll-1', 'client-1'), {});
    const list = [makeToken({ clientId: 'client-1', username: 'zoë "the\\admin"\n' }), makeToken({ clientId: 'client-1', username: '用户' })];
    await store.insertTokens(list);
    const events = list.map((t, i) => makeEvent({ jti: t.jti, username: t.username }, AT + 1000 * i));
    await Promise.all(list.map((t, i) => store.revokeToken(t.jti, AT, false, { event: events[i] })));
    expect(await store.pendingDeliveries('poll-1', 10)).toEqual([{ receiverId: 'poll-1', id: events[0]!.id, events, attempts: 0 }]);
    // Merged, the row's claims go into the SET as the bytes the row holds: the same text as the events' claims.
    const [merged] = await store.pendingDeliveries('poll-1', 10, 100);
    expect(setClaimsJson(merged!, 'https://iss', 'rs', AT)).toBe(JSON.stringify(setClaims({ id: merged!.id, events }, 'https://iss', 'rs', AT)));
    expect(merged!.events).toEqual(events);
  });

  it('migrates a version 4 outbox: pending deliveries, acknowledgements out of order, dead letters and attempts are kept', async () => {
    // A store as version 4 left it (its migrations' own SQL), with its outbox rows in the formats earlier builds wrote.
    raw((db) => {
      for (const m of MIGRATIONS.filter((m) => m.version <= 4)) db.exec(m.sql);
      db.prepare('INSERT INTO migrations (version, name, applied_at) VALUES (?, ?, ?)').run(1, 'v1', T0);
      db.pragma(`application_id = ${APPLICATION_ID}`);
      db.pragma('user_version = 4');
    });
    const events = Array.from({ length: 6 }, (_, i) => makeEvent({}, AT + i));
    const refs = [1, 1, 1, 2, 2, 0]; // the sixth was delivered everywhere: no delivery refers to it
    raw((db) => {
      const receiver = db.prepare("INSERT INTO receivers (id, delivery, endpoint_url, client_id, audience, created_at) VALUES (?, ?, ?, ?, 'rs', ?)");
      receiver.run('poll-1', 'poll', null, 'client-1', T0);
      receiver.run('poll-2', 'poll', null, 'client-2', T0);
      receiver.run('push-1', 'push', 'https://rs.example/events', null, T0);
      const row = db.prepare('INSERT INTO security_events (seq, id, at, payload, refs) VALUES (?, ?, ?, ?, ?)');
      events.forEach((e, i) => row.run(i + 1, e.id, e.at, i % 2 ? JSON.stringify(e) : JSON.stringify([e]), refs[i]));
      const delivery = db.prepare('INSERT INTO event_deliveries (receiver_id, event_seq, state, attempts, next_attempt_at) VALUES (?, ?, ?, ?, ?)');
      // poll-1 acknowledged the first and the third; poll-2 everything; push-1 gave up on the first, tried the third twice.
      for (const seq of [2, 4, 5]) delivery.run('poll-1', seq, 'pending', 0, AT);
      delivery.run('push-1', 1, 'dead', 6, AT);
      for (const seq of [3, 4, 5]) delivery.run('push-1', seq, 'pending', seq === 3 ? 2 : 0, AT);
    });
    store = await SqliteStore.open(file);
    expect(await store.schemaVersion()).toBe(LATEST_SCHEMA_VERSION);
    expect(await store.pendingDeliveries('poll-1', 10)).toEqual([1, 3, 4].map((i) => delivery('poll-1', events[i]!, 0)));
    expect(await store.pendingDeliveries('poll-2', 10)).toEqual([]);
    expect(await store.pendingDeliveries('push-1', 10)).toEqual([delivery('push-1', events[2]!, 2), delivery('push-1', events[3]!, 0), delivery('push-1', events[4]!, 0)]);
    expect((await store.listReceivers()).map((r) => [r.id, r.pending, r.dead, r.oldestPendingAt])).toEqual([
      ['poll-1', 3, 0, events[1]!.at],
      ['poll-2', 0, 0, null],
      ['push-1', 3, 1, events[2]!.at],
    ]);
    expect(raw((db) => db.prepare("SELECT count(*) FROM event_deliveries WHERE receiver_id LIKE 'poll-%'").pluck().get())).toBe(0);
    expect(raw((db) => db.prepare('SELECT seq FROM security_events ORDER BY seq').pluck().all())).toEqual([1, 2, 3, 4, 5]);
    // poll-1's cursor is before the second row, with the third marked: acknowledging the second moves it past the third.
    expect(await store.ackDeliveries('poll-1', [events[1]!.id], AT + 10)).toBe(1);
    expect(await store.pendingDeliveries('poll-1', 10)).toEqual([3, 4].map((i) => delivery('poll-1', events[i]!, 0)));
    // Rows 1–3 are below every poll cursor; push-1 waits for row 3 and keeps row 1 as a dead letter: row 2 goes.
    expect(await store.purgeDeliveredEvents(100)).toBe(1);
    expect(raw((db) => db.prepare('SELECT seq FROM security_events ORDER BY seq').pluck().all())).toEqual([1, 3, 4, 5]);
  });
});
