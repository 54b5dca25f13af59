import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MIGRATE_ACTION, migrateStore } from '../../src/migrate/migrate-store.js';
import { MemoryStore } from '../../src/store/memory/index.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import type { TokenStore } from '../../src/store/store.js';
import { HOUR, T0, makeClient, makeToken } from '../helpers/records.js';
import { makeEvent, makeKey, makePollReceiver, makePushReceiver } from './events-contract.js';

/*
 * `tokenctl migrate` and security events (docs/events.md): receivers and signing keys are copied,
 * with every field (a key's retirement time too); undelivered events are not, and are counted.
 */

const ACTOR = 'cli:test';

describe('migrate: receivers and signing keys', () => {
  let dir: string;
  let source: SqliteStore;
  let target: SqliteStore;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tokenctl-migrate-events-'));
    source = await SqliteStore.open(join(dir, 'source.db'));
    target = await SqliteStore.open(join(dir, 'target.db'));
    await source.createClient(makeClient({ id: 'client-1' }), {});
  });
  afterEach(async () => {
    await source.close();
    await target.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Two receivers with an event each still undelivered, and three keys (two retired). */
  async function seedEvents(store: TokenStore) {
    await store.createReceiver(makePushReceiver('push-1', { caPem: '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n' }), {});
    await store.createReceiver(makePollReceiver('poll-1', 'client-1'), {});
    const t = makeToken({ clientId: 'client-1' });
    await store.insertTokens([t]);
    await store.revokeToken(t.jti, T0 + 1, false, { event: makeEvent({ jti: t.jti }, T0 + 1) });
    for (const [i, kid] of ['k1', 'k2', 'k3'].entries()) await store.addSigningKey(makeKey(kid, T0 + i * HOUR), undefined, {});
  }

  it('copies every receiver and signing key with every field, and counts the deliveries left behind', async () => {
    await seedEvents(source);
    const report = await migrateStore(source, target, { actor: ACTOR });
    expect(report.events).toEqual({
      receivers: { source: 2, copied: 2, present: 0, differing: 0 },
      signingKeys: { source: 3, copied: 3, present: 0, differing: 0 },
      deliveriesNotCopied: 2,
    });
    expect(report.verified).toBe(1 + 1 + 2 + 3); // client, token, receivers, keys
    expect(await target.getReceiver('push-1')).toEqual(await source.getReceiver('push-1'));
    expect(await target.findPollReceiver('client-1')).toEqual(makePollReceiver('poll-1', 'client-1'));
    expect(await target.listSigningKeys()).toEqual(await source.listSigningKeys());
    expect((await target.listSigningKeys()).map((k) => k.retiredAt)).toEqual([null, T0 + 2 * HOUR, T0 + HOUR]);
    // The outbox is not copied: the receivers start empty on the target.
    expect((await target.listReceivers()).map((r) => r.pending)).toEqual([0, 0]);
    const [line] = await target.listAudit({ limit: 1 });
    expect(line).toMatchObject({ action: MIGRATE_ACTION });
    expect(line!.detail).toContain('2 receivers and 3 signing keys (not their 2 undelivered events)');
    // And the target writes events for its receivers from then on.
    const t = makeToken({ clientId: 'client-1' });
    await target.insertTokens([t]);
    const event = makeEvent({ jti: t.jti });
    await target.revokeToken(t.jti, T0 + 5, false, { event });
    expect((await target.pendingDeliveries('poll-1', 10)).flatMap((d) => d.events)).toEqual([event]);
  });

  it('with merge, leaves the receivers the target has and never adds keys over its own', async () => {
    await seedEvents(source);
    await target.createReceiver(makePushReceiver('push-1', { endpointUrl: 'https://elsewhere.example.test/events' }), {});
    await target.addSigningKey(makeKey('own', T0 + 5 * HOUR), undefined, {});
    const report = await migrateStore(source, target, { actor: ACTOR, merge: true });
    expect(report.events?.receivers).toEqual({ source: 2, copied: 1, present: 1, differing: 1 });
    expect(report.events?.signingKeys).toEqual({ source: 3, copied: 0, present: 0, differing: 0 });
    expect(report.differences).toEqual([
      'receiver push-1: endpointUrl, caPem',
      'signing key k3: not copied, the target has signing keys of its own',
      'signing key k2: not copied, the target has signing keys of its own',
      'signing key k1: not copied, the target has signing keys of its own',
    ]);
    expect((await target.getReceiver('push-1'))?.endpointUrl).toBe('https://elsewhere.example.test/events');
    expect((await target.listSigningKeys()).map((k) => k.kid)).toEqual(['own']);
    // A second run copies nothing more.
    const again = await migrateStore(source, target, { actor: ACTOR, merge: true });
    expect(again.events?.receivers).toMatchObject({ copied: 0, present: 2 });
  });

  it('leaves a target untouched by events when the source has neither receivers nor keys', async () => {
    const calls: string[] = [];
    const watched = new Proxy(new MemoryStore(), {
      get(store, name, receiver) {
        const value = Reflect.get(store, name, receiver) as unknown;
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          calls.push(String(name));
          return (value as (...a: unknown[]) => unknown).apply(store, args);
        };
      },
    });
    const report = await migrateStore(source, watched, { actor: ACTOR });
    expect(report.events).toEqual({ receivers: { source: 0, copied: 0, present: 0, differing: 0 }, signingKeys: { source: 0, copied: 0, present: 0, differing: 0 }, deliveriesNotCopied: 0 });
    // A store whose events are not implemented yet can still be migrated into.
    expect(calls.filter((c) => /Receiver|SigningKey|Deliver/.test(c))).toEqual([]);
  });
});
