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
    expect(payloads()).toEqual([events.map((e) => JSON.parse(JSON.stringify(e)) as unknown)]);
    expect(await store.listReceivers()).toMatchObject([
      { id: 'poll-1', pending: 1, oldestPendingAt: events[0]!.at },
      { id: 'push-1', pending: 1, oldestPendingAt: events[0]!.at },
    ]);
  });

  it('one revocation alone: the single event object earlier builds wrote; and such a row reads as one event', async () => {
    await store.createReceiver(makePollReceiver('poll-1', 'client-1'));
    const [t] = await tokens(1);
    const event = makeEvent({ jti: t!.jti });
    await store.revokeToken(t!.jti, AT, false, undefined, event);
    expect(payloads()).toEqual([JSON.parse(JSON.stringify(event))]);
    expect(await store.pendingDeliveries('poll-1', 10)).toEqual([delivery('poll-1', event, 0)]);
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
