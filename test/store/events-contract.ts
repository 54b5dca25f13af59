import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  DuplicateReceiverError,
  RETENTION_ERROR,
  type BulkSelector,
  type Delivery,
  type ReceiverRecord,
  type RevocationEvent,
  type SigningKeyRecord,
  type TokenRecord,
  type TokenStore,
} from '../../src/store/store.js';
import { HOUR, MINUTE, T0, makeClient, makeGrant, makeToken } from '../helpers/records.js';
import type { StoreFactory } from './contract.js';

/** When the revocations of these tests happen: their events are due from then on. */
const AT = T0 + MINUTE;
const LEASE = 30_000;

/** A push receiver; every field can be overridden. */
export function makePushReceiver(id: string, overrides: Partial<ReceiverRecord> = {}): ReceiverRecord {
  return {
    id,
    delivery: 'push',
    endpointUrl: `https://${id}.example.test/events`,
    authorization: 'Bearer receiver-credential',
    caPem: null,
    clientId: null,
    audience: `https://${id}.example.test`,
    createdAt: T0,
    stream: null,
    retentionMs: 24 * HOUR,
    ...overrides,
  };
}

/** A poll receiver that polls as client `clientId`. */
export function makePollReceiver(id: string, clientId: string, overrides: Partial<ReceiverRecord> = {}): ReceiverRecord {
  return { id, delivery: 'poll', endpointUrl: null, authorization: null, caPem: null, clientId, audience: `https://${id}.example.test`, createdAt: T0, stream: null, retentionMs: 24 * HOUR, ...overrides };
}

/** An event of scope `token` (access token `jti`), at `at`. */
export function makeEvent(overrides: Partial<RevocationEvent> = {}, at = AT): RevocationEvent {
  return {
    id: randomUUID(),
    at,
    reason: 'revoked',
    scope: 'token',
    jti: randomUUID(),
    tokenType: 'access_token',
    grantId: randomUUID(),
    username: 'alice',
    clientId: 'client-1',
    ...overrides,
  };
}

/** The delivery of one event alone to `receiverId` (what sequential revocations get). */
export function delivery(receiverId: string, event: RevocationEvent, attempts: number): Delivery {
  return { receiverId, id: event.id, events: [event], attempts };
}

/** A signing key created at `createdAt`, current. */
export function makeKey(kid: string, createdAt: number): SigningKeyRecord {
  return {
    kid,
    alg: 'ES256',
    privateJwk: JSON.stringify({ kty: 'EC', crv: 'P-256', x: `x-${kid}`, y: `y-${kid}`, d: `d-${kid}` }),
    publicJwk: JSON.stringify({ kty: 'EC', crv: 'P-256', x: `x-${kid}`, y: `y-${kid}`, kid }),
    createdAt,
    retiredAt: null,
  };
}

/**
 * The {@link EventStore} half of the store contract (src/store/ports/outbox.ts, src/store/event-records.ts), and the `event`
 * argument of the revocation methods: every store runs it beside `describeStoreContract`, with
 * the same factory. MemoryStore is the reference. Each test gets a fresh store holding two
 * clients, `client-1` and `client-2`, and no receiver.
 */
export function describeEventStoreContract(name: string, factory: StoreFactory): void {
  describe(`EventStore contract: ${name}`, () => {
    let store: TokenStore;
    let cleanup: () => Promise<void>;

    beforeEach(async () => {
      ({ store, cleanup } = await factory());
      await store.createClient(makeClient({ id: 'client-1' }), {});
      await store.createClient(makeClient({ id: 'client-2', createdAt: T0 + 1 }), {});
    });
    afterEach(async () => {
      await cleanup();
    });

    const insert = async (...tokens: TokenRecord[]) => {
      await store.insertTokens(tokens);
      return tokens;
    };
    /** The events pending for a receiver, oldest first (the poll view). */
    const pendingEvents = async (receiverId: string) => (await store.pendingDeliveries(receiverId, 1000)).flatMap((d) => d.events);
    const pendingIds = async (receiverId: string) => (await pendingEvents(receiverId)).map((e) => e.id);
    /** Revokes a fresh access token with `event`: one event written, when there are receivers. */
    const emit = async (event: RevocationEvent = makeEvent()) => {
      const [t] = await insert(makeToken({ clientId: 'client-1' }));
      expect(await store.revokeToken(t!.jti, event.at, false, { event })).toBe(true);
      return event;
    };
    /** A whole bulk revocation with one event passed to every batch; the answers of each batch. */
    const revokeAll = async (selector: BulkSelector, at: number, limit: number, event: RevocationEvent) => {
      const batches: { revoked: number; more: boolean; pendingAfter: number }[] = [];
      let resume: string | undefined;
      for (let more = true; more; ) {
        if (batches.length > 100) throw new Error('revokeBulk never said it was done');
        const batch = await store.revokeBulk(selector, at, limit, resume, { event });
        batches.push({ revoked: batch.revoked, more: batch.more, pendingAfter: (await store.pendingDeliveries('poll-1', 1000)).length });
        more = batch.more;
        resume = batch.resume;
      }
      return batches;
    };
    const claim = (owner: string, now: number, limit = 10, perReceiver = 10, leaseMs = LEASE) => store.claimPushReceivers(owner, now, leaseMs, limit, perReceiver);
    const status = async (id: string) => (await store.listReceivers()).find((r) => r.id === id);

    describe('receivers', () => {
      it('stores a receiver and returns it unchanged; null for an unknown id', async () => {
        const push = makePushReceiver('push-1', { caPem: '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n' });
        const poll = makePollReceiver('poll-1', 'client-1');
        await store.createReceiver(push, {});
        await store.createReceiver(poll, {});
        expect(await store.getReceiver('push-1')).toEqual(push);
        expect(await store.getReceiver('poll-1')).toEqual(poll);
        expect(await store.getReceiver('nobody')).toBeNull();
      });

      it('updates a receiver\'s endpoint, Authorization and stream settings, with its audit line; false for an unknown id', async () => {
        await store.createReceiver(makePushReceiver('push-1'), {});
        const change = { endpointUrl: 'https://moved.example.test/events', authorization: null, stream: '{"eventsRequested":[]}' };
        const audit = { at: T0, actor: 'ssf:c', action: 'receiver.update', target: 'receiver:push-1', count: 1, detail: 'stream updated' };
        expect(await store.updateReceiver('push-1', change, { audit })).toBe(true);
        expect(await store.getReceiver('push-1')).toEqual({ ...makePushReceiver('push-1'), ...change });
        expect((await store.listAudit({})).map((a) => a.action)).toContain('receiver.update');
        expect(await store.updateReceiver('nobody', change, {})).toBe(false);
      });

      it('updates only the fields a change names, null a value; the stream and the retention in one call', async () => {
        const push = makePushReceiver('push-1', { stream: '{"status":"enabled"}' });
        await store.createReceiver(push, {});
        expect(await store.updateReceiver('push-1', { stream: '{"status":"paused"}', retentionMs: 7 * 24 * HOUR }, {})).toBe(true);
        expect(await store.getReceiver('push-1')).toEqual({ ...push, stream: '{"status":"paused"}', retentionMs: 7 * 24 * HOUR });
        expect(await store.updateReceiver('push-1', { authorization: null, stream: null }, {})).toBe(true);
        expect(await store.getReceiver('push-1')).toEqual({ ...push, authorization: null, stream: null, retentionMs: 7 * 24 * HOUR });
        expect(await store.updateReceiver('push-1', {}, {})).toBe(true);
        expect(await store.getReceiver('push-1')).toEqual({ ...push, authorization: null, stream: null, retentionMs: 7 * 24 * HOUR });
      });

      it('rejects a duplicate id with DuplicateReceiverError and keeps the first', async () => {
        await store.createReceiver(makePushReceiver('r-1'), {});
        const dup = makePollReceiver('r-1', 'client-1');
        await expect(store.createReceiver(dup, {})).rejects.toBeInstanceOf(DuplicateReceiverError);
        await expect(store.createReceiver(dup, {})).rejects.toMatchObject({ receiverId: 'r-1' });
        expect((await store.getReceiver('r-1'))?.delivery).toBe('push');
      });

      it('finds the poll receiver of a client, and none for a push receiver or another client', async () => {
        await store.createReceiver(makePushReceiver('push-1'), {});
        await store.createReceiver(makePollReceiver('poll-2', 'client-2'), {});
        expect(await store.findPollReceiver('client-2')).toEqual(makePollReceiver('poll-2', 'client-2'));
        expect(await store.findPollReceiver('client-1')).toBeNull();
        expect(await store.findPollReceiver('push-1')).toBeNull();
      });

      it('lists every receiver by id with its delivery counts', async () => {
        expect(await store.listReceivers()).toEqual([]);
        await store.createReceiver(makePushReceiver('z-push'), {});
        await store.createReceiver(makePollReceiver('a-poll', 'client-1'), {});
        await store.createReceiver(makePushReceiver('m-push'), {});
        const idle = { pending: 0, dead: 0, oldestPendingAt: null, lastError: null, lastDeliveredAt: null };
        expect(await store.listReceivers()).toEqual([
          { ...makePollReceiver('a-poll', 'client-1'), ...idle },
          { ...makePushReceiver('m-push'), ...idle },
          { ...makePushReceiver('z-push'), ...idle },
        ]);
        await emit(makeEvent({}, AT));
        await emit(makeEvent({}, AT + 5));
        for (const r of await store.listReceivers()) expect(r).toMatchObject({ pending: 2, dead: 0, oldestPendingAt: AT });
      });

      it('deletes a receiver with its pending and dead deliveries; false for an unknown id', async () => {
        await store.createReceiver(makePushReceiver('push-1'), {});
        await store.createReceiver(makePollReceiver('poll-1', 'client-1'), {});
        const [dead, pending] = [await emit(), await emit()];
        const [c] = await claim('node-a', AT);
        expect(c!.deliveries.map((d) => d.id)).toEqual([dead.id, pending.id]);
        await store.settleDelivery('node-a', 'push-1', dead.id, { kind: 'dead', at: AT, error: 'HTTP 400' });
        expect(await status('push-1')).toMatchObject({ pending: 1, dead: 1 });
        expect(await store.deleteReceiver('push-1', {})).toBe(true);
        expect(await store.deleteReceiver('push-1', {})).toBe(false);
        expect(await store.getReceiver('push-1')).toBeNull();
        expect(await store.pendingDeliveries('push-1', 10)).toEqual([]);
        expect(await store.retryDead('push-1', AT, {})).toBe(0);
        expect((await store.listReceivers()).map((r) => r.id)).toEqual(['poll-1']);
        // The other receiver keeps its own.
        expect(await pendingIds('poll-1')).toEqual([dead.id, pending.id]);
        // Once the last receiver is gone, the events are no one's: purged, and new ones not written.
        expect(await store.deleteReceiver('poll-1', {})).toBe(true);
        expect(await store.purgeDeliveredEvents(100)).toBe(2);
        await emit();
        expect(await store.purgeDeliveredEvents(100)).toBe(0);
      });

      it('writes the audit line it is given with the change: none when nothing changed, retry’s counting what it requeued', async () => {
        const line = (action: string, target: string) => ({ at: AT, actor: 'cli:ops', action, target, count: 1, detail: '' });
        await store.createReceiver(makePushReceiver('push-1'), { audit: line('receiver.add', 'receiver:push-1') });
        await expect(store.createReceiver(makePushReceiver('push-1'), { audit: line('receiver.add', 'receiver:again') })).rejects.toThrow(DuplicateReceiverError);
        const [dead] = [await emit(), await emit()];
        await claim('node-a', AT);
        await store.settleDelivery('node-a', 'push-1', dead!.id, { kind: 'dead', at: AT, error: 'HTTP 400' });
        expect(await store.retryDead('push-1', AT + 1, { audit: line('receiver.retry', 'receiver:push-1') })).toBe(1);
        expect(await store.retryDead('push-1', AT + 2, { audit: line('receiver.retry', 'receiver:push-1') })).toBe(0);
        expect(await store.deleteReceiver('push-1', { audit: line('receiver.remove', 'receiver:push-1') })).toBe(true);
        expect(await store.deleteReceiver('push-1', { audit: line('receiver.remove', 'receiver:gone') })).toBe(false);
        expect((await store.listAudit({})).map((a) => [a.action, a.target, a.count]).reverse()).toEqual([
          ['receiver.add', 'receiver:push-1', 1],
          ['receiver.retry', 'receiver:push-1', 1],
          ['receiver.retry', 'receiver:push-1', 0],
          ['receiver.remove', 'receiver:push-1', 1],
        ]);
      });
    });

    describe('the event argument of the revocations', () => {
      it('writes nothing while no receiver is registered, and nothing of it for a receiver added later', async () => {
        await emit();
        const g = makeGrant({ clientId: 'client-1' });
        await insert(g.refresh, g.access);
        expect(await store.revokeGrant(g.refresh.grantId, AT, { event: makeEvent({ scope: 'grant' }) })).toBe(2);
        await store.createReceiver(makePollReceiver('poll-1', 'client-1'), {});
        await store.createReceiver(makePushReceiver('push-1'), {});
        expect(await store.pendingDeliveries('poll-1', 10)).toEqual([]);
        expect(await claim('node-a', AT + HOUR)).toEqual([]);
        expect(await store.purgeDeliveredEvents(100)).toBe(0); // no event was stored at all
      });

      it('writes one delivery per receiver, the event unchanged, due at the time of the event', async () => {
        await store.createReceiver(makePushReceiver('push-1'), {});
        await store.createReceiver(makePushReceiver('push-2'), {});
        await store.createReceiver(makePollReceiver('poll-1', 'client-1'), {});
        const event = makeEvent({ scope: 'grant', tokenType: 'refresh_token', reason: 'reuse_detected' });
        await emit(event);
        // Members the event does not have stay absent (never null).
        const user: RevocationEvent = { id: randomUUID(), at: AT, reason: 'revoked', scope: 'user', username: 'bob' };
        await emit(user);
        expect(await store.pendingDeliveries('poll-1', 10)).toEqual([
          delivery('poll-1', event, 0),
          delivery('poll-1', user, 0),
        ]);
        expect(Object.keys((await pendingEvents('poll-1'))[1]!).sort()).toEqual(['at', 'id', 'reason', 'scope', 'username']);
        expect(await claim('node-a', AT - 1)).toEqual([]); // not due before the event happened
        const claimed = await claim('node-a', AT);
        expect(claimed.map((c) => c.receiver)).toEqual([makePushReceiver('push-1'), makePushReceiver('push-2')]);
        for (const c of claimed) expect(c.deliveries).toEqual([delivery(c.receiver.id, event, 0), delivery(c.receiver.id, user, 0)]);
      });

      it('revokeToken writes its event only when this call revoked the token (with cascade too)', async () => {
        await store.createReceiver(makePollReceiver('poll-1', 'client-1'), {});
        const g = makeGrant({ clientId: 'client-1' });
        await insert(g.refresh, g.access);
        const first = makeEvent({ scope: 'grant', jti: g.refresh.jti });
        expect(await store.revokeToken(g.refresh.jti, AT, true, { event: first })).toBe(true);
        expect(await store.revokeToken(g.refresh.jti, AT, true, { event: makeEvent() })).toBe(false);
        expect(await store.revokeToken(g.access.jti, AT, false, { event: makeEvent() })).toBe(false); // revoked by the cascade
        expect(await store.revokeToken('no-such-jti', AT, false, { event: makeEvent() })).toBe(false);
        expect(await pendingIds('poll-1')).toEqual([first.id]);
      });

      it('revokeToken writes the event with the audit entry, in the same step', async () => {
        await store.createReceiver(makePollReceiver('poll-1', 'client-1'), {});
        const [t] = await insert(makeToken({ clientId: 'client-1' }));
        const event = makeEvent({ jti: t!.jti });
        const audit = { at: AT, actor: 'client-1', action: 'token.revoke', target: t!.jti, count: 1, detail: 'x' };
        expect(await store.revokeToken(t!.jti, AT, false, { audit, event })).toBe(true);
        expect(await pendingIds('poll-1')).toEqual([event.id]);
        expect((await store.listAudit({ jti: t!.jti })).length).toBe(1);
      });

      it('revokeGrant writes its event only when a token changed', async () => {
        await store.createReceiver(makePollReceiver('poll-1', 'client-1'), {});
        const g = makeGrant({ clientId: 'client-1' });
        await insert(g.refresh, g.access);
        const first = makeEvent({ scope: 'grant', grantId: g.refresh.grantId });
        expect(await store.revokeGrant(g.refresh.grantId, AT, { event: first })).toBe(2);
        expect(await store.revokeGrant(g.refresh.grantId, AT, { event: makeEvent() })).toBe(0);
        expect(await store.revokeGrant('no-such-grant', AT, { event: makeEvent() })).toBe(0);
        expect(await pendingIds('poll-1')).toEqual([first.id]);
      });

      it('revokeBulk writes the event of each batch that revoked a token, with that batch: the first one first', async () => {
        await store.createReceiver(makePollReceiver('poll-1', 'client-1'), {});
        for (let i = 0; i < 4; i++) {
          const g = makeGrant({ clientId: i % 2 === 0 ? 'client-1' : 'client-2', username: 'bob' });
          await insert(g.refresh, g.access);
        }
        const userEvent = () => makeEvent({ scope: 'user', username: 'bob', jti: undefined, tokenType: undefined, grantId: undefined, clientId: undefined });
        const first = userEvent();
        const one = await store.revokeBulk({ username: 'bob' }, AT, 1, undefined, { event: first });
        expect(one.revoked).toBeGreaterThan(0);
        expect(one.more).toBe(true);
        // Out with the first batch, before the rest is revoked: a revocation stopped here has told.
        expect(await pendingEvents('poll-1')).toEqual([first]);
        const events = [first];
        let resume = one.resume;
        let revoked = one.revoked;
        for (let more = true, calls = 0; more; calls++) {
          if (calls > 20) throw new Error('revokeBulk never said it was done');
          const event = userEvent();
          const batch = await store.revokeBulk({ username: 'bob' }, AT, 1, resume, { event });
          if (batch.revoked > 0) events.push(event);
          revoked += batch.revoked;
          more = batch.more;
          resume = batch.resume;
        }
        expect(revoked).toBe(8);
        // One event a batch that revoked, none for one that did not.
        expect(await pendingEvents('poll-1')).toEqual(events);
      });

      it('revokeBulk writes no event for a batch that revoked nothing, also after earlier batches did', async () => {
        await store.createReceiver(makePollReceiver('poll-1', 'client-1'), {});
        const grants = [makeGrant({ clientId: 'client-1', username: 'carol' }), makeGrant({ clientId: 'client-1', username: 'carol' })];
        for (const g of grants) await insert(g.refresh, g.access);
        const event = makeEvent({ scope: 'user', username: 'carol' });
        const first = await store.revokeBulk({ username: 'carol' }, AT, 1, undefined, { event });
        expect(first.revoked).toBeGreaterThan(0);
        expect(first.more).toBe(true);
        expect(await pendingIds('poll-1')).toEqual([event.id]);
        // Whatever is left is revoked by someone else (no event) before the next batches run.
        for (const g of grants) await store.revokeGrant(g.refresh.grantId, AT, {});
        let resume = first.resume;
        for (let more = true, calls = 0; more; calls++) {
          if (calls > 10) throw new Error('revokeBulk never said it was done');
          const batch = await store.revokeBulk({ username: 'carol' }, AT, 1, resume, { event: makeEvent({ scope: 'user', username: 'carol' }) });
          expect(batch.revoked).toBe(0);
          more = batch.more;
          resume = batch.resume;
        }
        expect(await pendingIds('poll-1')).toEqual([event.id]);
      });

      it('revokeBulk writes nothing when nothing changed, and one event for a jti', async () => {
        await store.createReceiver(makePollReceiver('poll-1', 'client-1'), {});
        const expired = makeToken({ clientId: 'client-1', username: 'dave', expiresAt: AT - 1 });
        await insert(expired);
        for (const selector of [{ username: 'dave' }, { username: 'nobody' }, { clientId: 'client-2' }, { jti: expired.jti }, { jti: 'no-such-jti' }] as BulkSelector[]) {
          expect(await revokeAll(selector, AT, 10, makeEvent())).toEqual([{ revoked: 0, more: false, pendingAfter: 0 }]);
        }
        const g = makeGrant({ clientId: 'client-2' });
        await insert(g.refresh, g.access);
        const event = makeEvent({ scope: 'grant', jti: g.refresh.jti });
        expect((await revokeAll({ jti: g.refresh.jti }, AT, 1, event)).map((b) => b.revoked)).toEqual([2]);
        expect(await revokeAll({ jti: g.refresh.jti }, AT, 1, makeEvent())).toEqual([{ revoked: 0, more: false, pendingAfter: 1 }]);
        expect(await pendingEvents('poll-1')).toEqual([event]);
      });

      it('deleteClient writes its event only when it deleted the client', async () => {
        await store.createReceiver(makePollReceiver('poll-1', 'client-1'), {});
        const event = makeEvent({ scope: 'client', reason: 'client_deleted', clientId: 'client-2' });
        expect(await store.deleteClient('client-2', { event })).toBe(true);
        expect(await store.deleteClient('client-2', { event: makeEvent() })).toBe(false);
        expect(await store.deleteClient('nobody', { event: makeEvent() })).toBe(false);
        expect(await pendingEvents('poll-1')).toEqual([event]);
      });

      it('keeps the events of every receiver in the order of their revocations', async () => {
        await store.createReceiver(makePollReceiver('poll-1', 'client-1'), {});
        await store.createReceiver(makePushReceiver('push-1'), {});
        // Times out of order on purpose: the order is the commits', not the clock's.
        const events = [await emit(makeEvent({}, AT + 9)), await emit(makeEvent({}, AT + 1)), await emit(makeEvent({}, AT + 5))];
        const together = [makeEvent({}, AT + 2), makeEvent({}, AT + 3), makeEvent({}, AT + 4)];
        for (const e of together) await emit(e);
        expect(await pendingIds('poll-1')).toEqual([...events, ...together].map((e) => e.id));
        expect((await store.pendingDeliveries('poll-1', 2)).map((d) => d.id)).toEqual(events.slice(0, 2).map((e) => e.id));
        const [c] = await claim('node-a', AT + HOUR, 10, 4);
        expect(c!.deliveries.map((d) => d.id)).toEqual([...events, together[0]!].map((e) => e.id));
      });
      it('revocations committed together: every event in exactly one delivery per receiver, named by its first event', async () => {
        await store.createReceiver(makePollReceiver('poll-1', 'client-1'), {});
        await store.createReceiver(makePushReceiver('push-1'), {});
        const tokens = await insert(...Array.from({ length: 6 }, () => makeToken({ clientId: 'client-1' })));
        const events = tokens.map((t) => makeEvent({ jti: t.jti }));
        // Called in one turn: a store that commits them together may put them in one delivery.
        const revoked = await Promise.all([
          ...tokens.map((t, i) => store.revokeToken(t.jti, AT, false, { event: events[i] })),
          store.revokeToken('no-such-jti', AT, false, { event: makeEvent() }), // changes nothing: no event
        ]);
        expect(revoked).toEqual([...tokens.map(() => true), false]);
        const ids = events.map((e) => e.id).sort();
        for (const receiverId of ['poll-1', 'push-1']) {
          const deliveries = await store.pendingDeliveries(receiverId, 1000);
          for (const d of deliveries) {
            expect(d.events.length).toBeGreaterThan(0);
            expect(d.id).toBe(d.events[0]!.id);
          }
          expect(deliveries.flatMap((d) => d.events.map((e) => e.id)).sort()).toEqual(ids);
          expect(deliveries.flatMap((d) => d.events).sort((a, b) => compare(a.id, b.id))).toEqual([...events].sort((a, b) => compare(a.id, b.id)));
        }
        // One after the other: one delivery each, after those.
        const later = [await emit(), await emit()];
        expect((await store.pendingDeliveries('poll-1', 1000)).slice(-2)).toEqual(later.map((e) => delivery('poll-1', e, 0)));
        // Acknowledging a delivery acknowledges every event in it.
        const first = (await store.pendingDeliveries('poll-1', 1))[0]!;
        expect(await store.ackDeliveries('poll-1', [first.id], AT + 1)).toBe(1);
        expect((await pendingEvents('poll-1')).length).toBe(events.length + later.length - first.events.length);
      });
    });

    describe('push: leases', () => {
      beforeEach(async () => {
        for (const id of ['push-1', 'push-2', 'push-3']) await store.createReceiver(makePushReceiver(id), {});
        await store.createReceiver(makePollReceiver('poll-1', 'client-1'), {});
      });

      it('passes over a paused stream, its deliveries kept, and claims it again once enabled', async () => {
        // Formatted as another writer might (spaces, newlines): the status is read from the JSON, not its text.
        const paused = JSON.stringify({ eventsRequested: [], alg: 'ES256', status: 'paused', description: 'not "status":"paused" here' }, null, 2);
        expect(await store.updateReceiver('push-1', { stream: paused }, {})).toBe(true);
        // The words inside a string value are not a paused stream; nor is a nested status.
        expect(await store.updateReceiver('push-2', { stream: JSON.stringify({ status: 'enabled', description: '"status":"paused"', reason: { status: 'paused' } }) }, {})).toBe(true);
        const e = await emit();
        expect((await claim('node-a', AT)).map((c) => c.receiver.id)).toEqual(['push-2', 'push-3']);
        expect(await store.pendingDeliveries('push-1', 10)).toHaveLength(1);
        expect(await store.updateReceiver('push-1', { stream: JSON.stringify({ ...JSON.parse(paused), status: 'enabled' }) }, {})).toBe(true);
        const [c] = await claim('node-a', AT + 1);
        expect(c!.receiver.id).toBe('push-1');
        expect(c!.deliveries.flatMap((d) => d.events.map((x) => x.id))).toEqual([e.id]);
      });

      it('a receiver registered paused is passed over until enabled; a stream that is no JSON object is not paused', async () => {
        await store.createReceiver(makePushReceiver('push-4', { stream: '{"status":"paused"}' }), {});
        await store.updateReceiver('push-2', { stream: '["paused"]' }, {});
        await store.updateReceiver('push-3', { stream: '"paused"' }, {});
        await emit();
        expect((await claim('node-a', AT)).map((c) => c.receiver.id)).toEqual(['push-1', 'push-2', 'push-3']);
        expect(await store.updateReceiver('push-4', { stream: '{"status":"enabled"}' }, {})).toBe(true);
        expect((await claim('node-a', AT + 1)).map((c) => c.receiver.id)).toEqual(['push-4']);
      });

      it('claims only push receivers with a due delivery, up to the limits', async () => {
        expect(await claim('node-a', AT)).toEqual([]); // nothing pending
        await emit();
        await emit();
        const claimed = await claim('node-a', AT, 2, 1);
        expect(claimed.length).toBe(2);
        for (const c of claimed) expect(c.deliveries.length).toBe(1);
        expect(claimed.every((c) => c.receiver.delivery === 'push')).toBe(true);
        const rest = await claim('node-a', AT, 10, 10);
        expect(rest.map((c) => c.receiver.id)).toEqual(['push-1', 'push-2', 'push-3'].filter((id) => !claimed.some((c) => c.receiver.id === id)));
        expect(rest[0]!.deliveries.length).toBe(2);
      });

      it('does not claim a leased receiver again, by anyone, until its lease ends', async () => {
        await emit();
        expect((await claim('node-a', AT)).length).toBe(3);
        expect(await claim('node-b', AT + 1)).toEqual([]);
        expect(await claim('node-a', AT + LEASE - 1)).toEqual([]);
        const after = await claim('node-b', AT + LEASE + 1);
        expect(after.map((c) => c.receiver.id)).toEqual(['push-1', 'push-2', 'push-3']);
        expect(await claim('node-a', AT + LEASE + 2)).toEqual([]);
      });

      it('gives each receiver to one of several concurrent claims', async () => {
        await emit();
        const owners = ['n1', 'n2', 'n3', 'n4', 'n5', 'n6'];
        const results = await Promise.all(owners.map((o) => claim(o, AT, 2)));
        const ids = results.flatMap((r) => r.map((c) => c.receiver.id)).sort();
        expect(ids).toEqual(['push-1', 'push-2', 'push-3']);
      });

      it('a release ends the lease early, and only its owner can release it', async () => {
        await emit();
        await claim('node-a', AT);
        await store.releaseReceiver('node-b', 'push-1');
        expect(await claim('node-b', AT + 1)).toEqual([]);
        await store.releaseReceiver('node-a', 'push-1');
        await store.releaseReceiver('node-a', 'nobody');
        expect((await claim('node-b', AT + 1)).map((c) => c.receiver.id)).toEqual(['push-1']);
      });

      it('delivered: the delivery is gone and the next one comes first', async () => {
        const [e1, e2] = [await emit(), await emit()];
        await claim('node-a', AT);
        await store.settleDelivery('node-a', 'push-1', e1.id, { kind: 'delivered', at: AT + 10 });
        expect(await status('push-1')).toMatchObject({ pending: 1, dead: 0, lastDeliveredAt: AT + 10, lastError: null, oldestPendingAt: e2.at });
        await store.releaseReceiver('node-a', 'push-1');
        const [c] = (await claim('node-b', AT + 20)).filter((x) => x.receiver.id === 'push-1');
        expect(c!.deliveries.map((d) => d.id)).toEqual([e2.id]);
        await store.settleDelivery('node-b', 'push-1', e2.id, { kind: 'delivered', at: AT + 30 });
        expect(await status('push-1')).toMatchObject({ pending: 0, dead: 0, oldestPendingAt: null, lastDeliveredAt: AT + 30 });
        // The other receivers still have both.
        expect(await status('push-2')).toMatchObject({ pending: 2, lastDeliveredAt: null });
      });

      it('retry: attempts counted, the receiver waits until the retry is due, its later events behind it', async () => {
        const [e1, e2] = [await emit(), await emit()];
        await claim('node-a', AT);
        await store.settleDelivery('node-a', 'push-1', e1.id, { kind: 'retry', at: AT + 1, retryAt: AT + 1000, error: 'HTTP 503' });
        expect(await status('push-1')).toMatchObject({ pending: 2, dead: 0, lastError: 'HTTP 503', oldestPendingAt: e1.at });
        await store.releaseReceiver('node-a', 'push-1');
        expect(await claim('node-b', AT + 999)).toEqual([]); // its first delivery is not due
        const [c] = await claim('node-b', AT + 1000);
        expect(c!.receiver.id).toBe('push-1');
        expect(c!.deliveries).toEqual([
          delivery('push-1', e1, 1),
          delivery('push-1', e2, 0),
        ]);
        await store.settleDelivery('node-b', 'push-1', e1.id, { kind: 'retry', at: AT + 1001, retryAt: AT + 3000, error: 'connection refused' });
        await store.releaseReceiver('node-b', 'push-1');
        expect(await status('push-1')).toMatchObject({ lastError: 'connection refused' });
        const [again] = await claim('node-c', AT + 3000);
        expect(again!.deliveries[0]).toEqual(delivery('push-1', e1, 2));
      });

      it('dead: a dead letter is counted apart, no longer delivered nor blocking, and retryDead requeues it', async () => {
        for (const id of ['push-2', 'push-3']) await store.deleteReceiver(id, {});
        const [e1, e2] = [await emit(), await emit()];
        await claim('node-a', AT);
        await store.settleDelivery('node-a', 'push-1', e1.id, { kind: 'retry', at: AT, retryAt: AT + 10, error: 'HTTP 500' });
        await store.settleDelivery('node-a', 'push-1', e1.id, { kind: 'dead', at: AT + 20, error: 'HTTP 400 invalid_request' });
        expect(await status('push-1')).toMatchObject({ pending: 1, dead: 1, lastError: 'HTTP 400 invalid_request', oldestPendingAt: e2.at });
        expect((await store.pendingDeliveries('push-1', 10)).map((d) => d.id)).toEqual([e2.id]);
        await store.releaseReceiver('node-a', 'push-1');
        const [c] = await claim('node-b', AT + 30);
        expect(c!.deliveries.map((d) => d.id)).toEqual([e2.id]);
        await store.settleDelivery('node-b', 'push-1', e2.id, { kind: 'delivered', at: AT + 40 });
        await store.releaseReceiver('node-b', 'push-1');
        expect(await claim('node-b', AT + HOUR)).toEqual([]);
        expect(await store.retryDead('push-1', AT + HOUR, {})).toBe(1);
        expect(await store.retryDead('push-1', AT + HOUR, {})).toBe(0);
        expect(await status('push-1')).toMatchObject({ pending: 1, dead: 0 });
        expect(await claim('node-b', AT + HOUR - 1)).toEqual([]); // due at the time given to retryDead
        const [requeued] = await claim('node-b', AT + HOUR);
        expect(requeued!.deliveries).toEqual([delivery('push-1', e1, 0)]);
      });

      it('ignores a settlement by anyone but the lease holder', async () => {
        const e1 = await emit();
        await claim('node-a', AT);
        await store.settleDelivery('node-b', 'push-1', e1.id, { kind: 'delivered', at: AT + 1 });
        await store.settleDelivery('node-b', 'push-1', e1.id, { kind: 'dead', at: AT + 1, error: 'x' });
        expect(await status('push-1')).toMatchObject({ pending: 1, dead: 0, lastError: null, lastDeliveredAt: null });
        // The lease lapses and moves to node-b: node-a's late answer is ignored.
        const moved = await claim('node-b', AT + LEASE + 1);
        expect(moved.length).toBe(3);
        await store.settleDelivery('node-a', 'push-1', e1.id, { kind: 'retry', at: AT + LEASE + 2, retryAt: AT + HOUR, error: 'late' });
        expect(await status('push-1')).toMatchObject({ pending: 1, lastError: null });
        await store.settleDelivery('node-b', 'push-1', e1.id, { kind: 'delivered', at: AT + LEASE + 3 });
        expect(await status('push-1')).toMatchObject({ pending: 0, lastDeliveredAt: AT + LEASE + 3 });
        // Settling what is not pending (delivered already, or unknown) changes nothing.
        await store.settleDelivery('node-b', 'push-1', e1.id, { kind: 'dead', at: AT + LEASE + 4, error: 'again' });
        await store.settleDelivery('node-b', 'push-1', 'no-such-event', { kind: 'dead', at: AT + LEASE + 4, error: 'again' });
        expect(await status('push-1')).toMatchObject({ pending: 0, dead: 0, lastError: null });
      });

      it('never claims a poll receiver', async () => {
        await emit();
        const claimed = await claim('node-a', AT + HOUR);
        expect(claimed.map((c) => c.receiver.id)).not.toContain('poll-1');
        expect(await status('poll-1')).toMatchObject({ pending: 1 });
      });
    });

    describe('poll', () => {
      beforeEach(async () => {
        await store.createReceiver(makePollReceiver('poll-1', 'client-1'), {});
        await store.createReceiver(makePollReceiver('poll-2', 'client-2'), {});
      });

      it('acknowledged events are gone for that receiver only; unknown ids and other receivers’ acks are ignored', async () => {
        const events = [await emit(), await emit(), await emit()];
        expect(await store.ackDeliveries('poll-1', [events[0]!.id, events[2]!.id, 'no-such-event'], AT + 5)).toBe(2);
        expect(await store.ackDeliveries('poll-1', [events[0]!.id], AT + 6)).toBe(0);
        expect(await store.ackDeliveries('poll-1', [], AT + 6)).toBe(0);
        expect(await pendingIds('poll-1')).toEqual([events[1]!.id]);
        expect(await pendingIds('poll-2')).toEqual(events.map((e) => e.id));
        expect(await status('poll-1')).toMatchObject({ pending: 1, lastDeliveredAt: AT + 5, oldestPendingAt: events[1]!.at });
        expect(await status('poll-2')).toMatchObject({ pending: 3, lastDeliveredAt: null });
        expect(await store.ackDeliveries('nobody', [events[1]!.id], AT)).toBe(0);
        expect(await store.pendingDeliveries('nobody', 10)).toEqual([]);
      });

      it('hands out the oldest first, at most the limit, with attempts 0', async () => {
        const events = [await emit(), await emit(), await emit()];
        const page = await store.pendingDeliveries('poll-2', 2);
        expect(page).toEqual(events.slice(0, 2).map((event) => delivery('poll-2', event, 0)));
      });
    });

    describe('retention: the bounded outbox', () => {
      it('updateReceiver sets a receiver\'s retention alone, the rest kept; false for an unknown receiver', async () => {
        const poll = makePollReceiver('poll-1', 'client-1', { stream: '{"status":"enabled"}' });
        await store.createReceiver(poll, {});
        expect((await store.getReceiver('poll-1'))!.retentionMs).toBe(24 * HOUR);
        expect(await store.updateReceiver('poll-1', { retentionMs: HOUR }, {})).toBe(true);
        expect(await store.getReceiver('poll-1')).toEqual({ ...poll, retentionMs: HOUR });
        expect((await store.listReceivers())[0]!.retentionMs).toBe(HOUR);
        expect(await store.updateReceiver('nobody', { retentionMs: HOUR }, {})).toBe(false);
      });

      it('expireDeliveries makes dead letters of what is pending longer than the retention, poll and push, oldest first, up to the limit', async () => {
        await store.createReceiver(makePollReceiver('poll-1', 'client-1', { retentionMs: HOUR }), {});
        await store.createReceiver(makePushReceiver('push-1', { retentionMs: 3 * HOUR }), {});
        const old = [await emit(makeEvent({}, AT)), await emit(makeEvent({}, AT + 1))];
        const recent = await emit(makeEvent({}, AT + 2 * HOUR));
        // Nothing is older than a retention yet.
        expect(await store.expireDeliveries(AT + HOUR, 100)).toBe(0);
        // An hour and a half later: poll-1's two old ones, one a call; push-1 (3 h) keeps them.
        expect(await store.expireDeliveries(AT + 90 * MINUTE, 1)).toBe(1);
        expect(await pendingIds('poll-1')).toEqual([old[1]!.id, recent.id]);
        expect(await store.expireDeliveries(AT + 90 * MINUTE, 100)).toBe(1);
        expect(await store.expireDeliveries(AT + 90 * MINUTE, 100)).toBe(0);
        expect(await pendingIds('poll-1')).toEqual([recent.id]);
        expect(await pendingIds('push-1')).toEqual([...old, recent].map((e) => e.id));
        expect(await status('poll-1')).toMatchObject({ pending: 1, dead: 2, oldestPendingAt: recent.at, lastError: RETENTION_ERROR });
        // Four hours on: push-1's old ones (3 h), and poll-1's recent one (1 h) too.
        expect(await store.expireDeliveries(AT + 4 * HOUR, 100)).toBe(3);
        expect(await status('push-1')).toMatchObject({ pending: 1, dead: 2, oldestPendingAt: recent.at, lastError: RETENTION_ERROR });
        expect(await status('poll-1')).toMatchObject({ pending: 0, dead: 3, oldestPendingAt: null });
        // Dead letters keep their events, and come back, in order, with receiver retry.
        await store.purgeDeliveredEvents(100);
        expect(await store.retryDead('poll-1', AT + 4 * HOUR, {})).toBe(3);
        expect(await store.retryDead('push-1', AT + 4 * HOUR, {})).toBe(2);
        expect(await pendingEvents('poll-1')).toEqual([...old, recent]);
        expect(await pendingEvents('push-1')).toEqual([...old, recent]);
        expect(await status('poll-1')).toMatchObject({ pending: 3, dead: 0 });
        // Acknowledged after the retry, they are gone for good.
        expect(await store.ackDeliveries('poll-1', [...old, recent].map((e) => e.id), AT + 4 * HOUR)).toBe(3);
        expect(await status('poll-1')).toMatchObject({ pending: 0, dead: 0 });
      });

      it('a poll receiver\'s later events still arrive and are acknowledged once its old ones are dead letters', async () => {
        await store.createReceiver(makePollReceiver('poll-1', 'client-1', { retentionMs: HOUR }), {});
        const old = await emit(makeEvent({}, AT));
        const mid = await emit(makeEvent({}, AT + 2 * HOUR));
        expect(await store.ackDeliveries('poll-1', [mid.id], AT + 2 * HOUR)).toBe(1); // out of order
        expect(await store.expireDeliveries(AT + 2 * HOUR, 100)).toBe(1);
        expect(await pendingIds('poll-1')).toEqual([]);
        const late = await emit(makeEvent({}, AT + 3 * HOUR));
        expect(await pendingIds('poll-1')).toEqual([late.id]);
        expect(await store.retryDead('poll-1', AT + 3 * HOUR, {})).toBe(1);
        // The retried one again, before the later one; the one acknowledged out of order stays acknowledged.
        expect(await pendingIds('poll-1')).toEqual([old.id, late.id]);
        expect(await status('poll-1')).toMatchObject({ pending: 2, dead: 0 });
      });
    });

    describe('purgeDeliveredEvents', () => {
      it('deletes, up to the limit, the events no delivery refers to any more', async () => {
        await store.createReceiver(makePollReceiver('poll-1', 'client-1'), {});
        await store.createReceiver(makePushReceiver('push-1'), {});
        const events = [await emit(), await emit(), await emit()];
        expect(await store.ackDeliveries('poll-1', events.map((e) => e.id), AT)).toBe(3);
        expect(await store.purgeDeliveredEvents(100)).toBe(0); // push-1 still has them
        await claim('node-a', AT);
        await store.settleDelivery('node-a', 'push-1', events[0]!.id, { kind: 'delivered', at: AT });
        await store.settleDelivery('node-a', 'push-1', events[1]!.id, { kind: 'delivered', at: AT });
        await store.settleDelivery('node-a', 'push-1', events[2]!.id, { kind: 'dead', at: AT, error: 'HTTP 400' });
        expect(await store.purgeDeliveredEvents(1)).toBe(1);
        expect(await store.purgeDeliveredEvents(100)).toBe(1);
        expect(await store.purgeDeliveredEvents(100)).toBe(0); // a dead letter keeps its event
        expect(await store.retryDead('push-1', AT + 1, {})).toBe(1);
        expect((await store.pendingDeliveries('push-1', 10)).map((d) => d.events[0]!)).toEqual([events[2]]);
      });
    });

    describe('signing keys', () => {
      it('adds keys as current, retiring the previous one at the new one’s creation, newest first', async () => {
        expect(await store.listSigningKeys()).toEqual([]);
        expect(await store.addSigningKey(makeKey('k1', T0), undefined, {})).toBe(true);
        expect(await store.listSigningKeys()).toEqual([makeKey('k1', T0)]);
        expect(await store.addSigningKey(makeKey('k2', T0 + HOUR), undefined, {})).toBe(true);
        expect(await store.addSigningKey(makeKey('k3', T0 + 2 * HOUR), undefined, {})).toBe(true);
        expect(await store.listSigningKeys()).toEqual([
          makeKey('k3', T0 + 2 * HOUR),
          { ...makeKey('k2', T0 + HOUR), retiredAt: T0 + 2 * HOUR },
          { ...makeKey('k1', T0), retiredAt: T0 + HOUR },
        ]);
      });

      it('keeps one current key per algorithm: an RS256 key retires no ES256 key, and ifCurrent looks at its own algorithm', async () => {
        const rsa = (kid: string, at: number) => ({ ...makeKey(kid, at), alg: 'RS256' });
        await store.addSigningKey(makeKey('e1', T0), null, {});
        expect(await store.addSigningKey(rsa('r1', T0 + 1), null, {})).toBe(true);
        expect(await store.addSigningKey(rsa('r2', T0 + 2), 'e1', {})).toBe(false);
        expect(await store.addSigningKey(rsa('r2', T0 + 2), 'r1', {})).toBe(true);
        expect((await store.listSigningKeys()).map((k) => [k.kid, k.alg, k.retiredAt])).toEqual([
          ['r2', 'RS256', null],
          ['r1', 'RS256', T0 + 2],
          ['e1', 'ES256', null],
        ]);
      });

      it('with ifCurrent null, adds a key only when there is no current one', async () => {
        expect(await store.addSigningKey(makeKey('k1', T0), null, {})).toBe(true);
        expect(await store.addSigningKey(makeKey('k2', T0 + 1), null, {})).toBe(false);
        expect((await store.listSigningKeys()).map((k) => [k.kid, k.retiredAt])).toEqual([['k1', null]]);
        // Several nodes starting at once: one key wins.
        const wins = await Promise.all(['a', 'b', 'c'].map((kid, i) => store.addSigningKey(makeKey(kid, T0 + 10 + i), null, {})));
        expect(wins).toEqual([false, false, false]);
        expect(await store.addSigningKey(makeKey('k3', T0 + HOUR), undefined, {})).toBe(true);
        expect((await store.listSigningKeys()).filter((k) => k.retiredAt === null).map((k) => k.kid)).toEqual(['k3']);
      });

      it('with ifCurrent, adds a key only while that kid is the current one; of several at once, one', async () => {
        expect(await store.addSigningKey(makeKey('k1', T0), 'k0', {})).toBe(false); // no current key at all
        await store.addSigningKey(makeKey('k1', T0), undefined, {});
        expect(await store.addSigningKey(makeKey('k2', T0 + 1), 'k0', {})).toBe(false);
        expect(await store.addSigningKey(makeKey('k2', T0 + 1), 'k1', {})).toBe(true);
        // Several nodes rotating the same old key at once: one wins.
        const wins = await Promise.all(['a', 'b', 'c'].map((kid, i) => store.addSigningKey(makeKey(kid, T0 + 10 + i), 'k2', {})));
        expect(wins.filter(Boolean)).toHaveLength(1);
        const keys = await store.listSigningKeys();
        expect(keys.filter((k) => k.retiredAt === null)).toHaveLength(1);
        expect(keys.map((k) => k.kid).sort()).toEqual(['k1', 'k2', ['a', 'b', 'c'][wins.indexOf(true)]].sort());
      });

      it('of several concurrent first keys with ifCurrent null, exactly one is added', async () => {
        const wins = await Promise.all(['a', 'b', 'c', 'd'].map((kid, i) => store.addSigningKey(makeKey(kid, T0 + i), null, {})));
        expect(wins.filter(Boolean).length).toBe(1);
        expect((await store.listSigningKeys()).length).toBe(1);
      });

      it('with an audit line: the line is written with the key, and not when the key is not added', async () => {
        const line = (kid: string, at: number) => ({ at, actor: 'serve:n1', action: 'signing_key.rotate', target: `key:${kid}`, count: 1, detail: 'ES256' });
        await store.addSigningKey(makeKey('k1', T0), null, {});
        expect(await store.addSigningKey(makeKey('k2', T0 + HOUR), 'k1', { audit: line('k2', T0 + HOUR) })).toBe(true);
        expect(await store.addSigningKey(makeKey('k3', T0 + 2 * HOUR), 'k1', { audit: line('k3', T0 + 2 * HOUR) })).toBe(false); // k1 is no longer current
        // Of several nodes rotating the same key at once, one key and one line.
        const wins = await Promise.all(['a', 'b', 'c'].map((kid, i) => store.addSigningKey(makeKey(kid, T0 + 3 * HOUR + i), 'k2', { audit: line(kid, T0 + 3 * HOUR + i) })));
        const winner = ['a', 'b', 'c'][wins.indexOf(true)];
        expect(wins.filter(Boolean)).toHaveLength(1);
        expect((await store.listAudit({})).map((a) => [a.actor, a.action, a.target, a.count, a.detail])).toEqual([
          ['serve:n1', 'signing_key.rotate', `key:${winner}`, 1, 'ES256'], // newest first
          ['serve:n1', 'signing_key.rotate', 'key:k2', 1, 'ES256'],
        ]);
      });

      it('deletes the keys retired before a time, never the current one', async () => {
        await store.addSigningKey(makeKey('k1', T0), undefined, {});
        await store.addSigningKey(makeKey('k2', T0 + HOUR), undefined, {});
        await store.addSigningKey(makeKey('k3', T0 + 2 * HOUR), undefined, {});
        expect(await store.deleteRetiredKeys(T0 + HOUR)).toBe(0); // k1 retired at T0 + HOUR: not before
        expect(await store.deleteRetiredKeys(T0 + HOUR + 1)).toBe(1);
        expect(await store.deleteRetiredKeys(T0 + 100 * HOUR)).toBe(1);
        expect((await store.listSigningKeys()).map((k) => k.kid)).toEqual(['k3']);
      });
    });
  });
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
