import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/engine/clock.js';
import { streamJson, streamSettingsOf, type StreamStatus } from '../../src/engine/stream-settings.js';
import { PushDeliverer } from '../../src/events/deliverer.js';
import { SigningKeys } from '../../src/events/keys.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { isPausedStream, type ReceiverRecord, type TokenStore } from '../../src/store/store.js';
import { PG_SKIP_MESSAGE, PG_URL, openTestStore } from '../helpers/pg.js';
import { makeClient, makeToken } from '../helpers/records.js';

/**
 * SSF 1.0 §8.1.2 by push: a paused stream's events are held (nothing is pushed) and pushed once it
 * is enabled again; a disabled stream's are dropped (settled unsent). A real SQLite and PostgreSQL
 * store, the deliverer's rounds run by hand, the push the one it is given.
 */
const T0 = Date.UTC(2026, 0, 1);

const backends: [string, () => Promise<{ store: TokenStore; cleanup: () => Promise<void> }>][] = [
  [
    'SQLite',
    async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tokenctl-paused-'));
      const store = await SqliteStore.open(path.join(dir, 'tokens.db'));
      return { store, cleanup: async () => (await store.close(), fs.rmSync(dir, { recursive: true, force: true })) };
    },
  ],
  ...(PG_URL !== undefined ? [['PostgreSQL', () => openTestStore(PG_URL!)] as [string, () => Promise<{ store: TokenStore; cleanup: () => Promise<void> }>]] : []),
];

if (PG_URL === undefined) it.skip(`a paused push stream on PostgreSQL: ${PG_SKIP_MESSAGE}`, () => {});

describe.each(backends)('a paused push stream on %s', (_name, open) => {
  it('holds its events while paused, pushes them once enabled; a disabled stream drops them', async () => {
    const { store, cleanup } = await open();
    try {
      const clock = new ManualClock(T0);
      const receiver: ReceiverRecord = {
        id: 'rs', delivery: 'push', endpointUrl: 'https://rs.example.test/events', authorization: null, caPem: null, clientId: null,
        audience: 'rs', createdAt: T0, retentionMs: 86_400_000, stream: null,
      };
      await store.createReceiver(receiver, {});
      await store.createClient(makeClient({ id: 'app' }), {});
      const pushed: string[] = [];
      const deliverer = new PushDeliverer({
        store, keys: new SigningKeys(store, () => clock.now()), issuer: () => 'https://issuer.example.test', clock,
        push: async (_r, set) => (pushed.push(JSON.parse(Buffer.from(set.split('.')[1]!, 'base64url').toString()).jti as string), { kind: 'accepted' }),
      });
      const setStatus = async (status: StreamStatus) => {
        const stream = streamJson({ ...streamSettingsOf(null), status });
        expect(isPausedStream(stream)).toBe(status === 'paused');
        expect(await store.updateReceiver('rs', { endpointUrl: receiver.endpointUrl, authorization: null, stream }, {})).toBe(true);
      };
      const revoke = async () => {
        const t = makeToken({ clientId: 'app' });
        await store.insertTokens([t]);
        expect(await store.revokeToken(t.jti, clock.now(), false, { event: { id: crypto.randomUUID(), at: clock.now(), reason: 'revoked', scope: 'token', clientId: 'app', jti: t.jti } })).toBe(true);
      };
      const pending = async () => (await store.listReceivers()).find((r) => r.id === 'rs')!.pending;

      await setStatus('paused');
      await revoke();
      clock.advance(1_000);
      await deliverer.tick();
      expect(pushed).toEqual([]);
      expect(await pending()).toBe(1);

      await setStatus('enabled');
      clock.advance(1_000);
      await deliverer.tick();
      expect(pushed).toHaveLength(1);
      expect(await pending()).toBe(0);

      await setStatus('disabled');
      await revoke();
      clock.advance(1_000);
      await deliverer.tick();
      expect(pushed).toHaveLength(1);
      expect(await pending()).toBe(0);
    } finally {
      await cleanup();
    }
  });
});
