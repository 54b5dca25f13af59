import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PartialBulkRevocationError } from '../../src/engine/errors.js';
import { MemoryStore } from '../../src/store/memory/index.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import type { TokenStore } from '../../src/store/store.js';
import { addClient, issueFor, makeEngine, type EngineSetup } from '../helpers/engine.js';
import { openTestStore, PG_SKIP_MESSAGE, PG_URL } from '../helpers/pg.js';
import { makePollReceiver } from '../store/events-contract.js';

/**
 * A bulk revocation tells the receivers with its first batch (docs/events.md), so that one
 * stopped part way (Ctrl-C, a store error) has told them: on every store.
 */
type Opened = { store: TokenStore; cleanup: () => Promise<void> };
const STORES: [string, (() => Promise<Opened>) | undefined][] = [
  ['MemoryStore', async () => ({ store: new MemoryStore(), cleanup: async () => undefined })],
  [
    'SqliteStore',
    async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tokenctl-bulk-events-'));
      const store = await SqliteStore.open(path.join(dir, 'tokens.db'));
      return { store, cleanup: async () => (await store.close(), fs.rmSync(dir, { recursive: true, force: true })) };
    },
  ],
  ['PostgresStore', PG_URL === undefined ? undefined : (url => () => openTestStore(url))(PG_URL)],
];

if (PG_URL === undefined) console.log(PG_SKIP_MESSAGE);

const GRANTS = 4; // 8 tokens: 4 batches of 2
const BATCH = 2;

for (const [name, open] of STORES) {
  describe.skipIf(open === undefined)(`a bulk revocation's event on ${name}`, () => {
    let opened: Opened;
    let env: EngineSetup<TokenStore>;
    beforeEach(async () => {
      opened = await open!();
      env = makeEngine({ store: opened.store });
      const app = await addClient(env.store, { id: 'app' });
      await addClient(env.store, { id: 'rs', secretHash: 'not-a-real-hash' });
      await env.store.createReceiver(makePollReceiver('rs', 'rs'), {});
      for (let i = 0; i < GRANTS; i++) await issueFor(env.engine, app, { username: 'alice' });
    });
    afterEach(() => opened.cleanup());

    const pending = async () => (await env.store.pendingDeliveries('rs', 1000)).flatMap((d) => d.events);

    it('interrupted after its first batch: exactly one event, naming the client, is in the outbox', async () => {
      const controller = new AbortController();
      const done = await env.engine.revokeBulk({ clientId: 'app' }, 'cli:op', { batchSize: BATCH, signal: controller.signal, onProgress: () => controller.abort() });
      expect(done.interrupted).toBe(true);
      expect(done.revoked).toBeGreaterThan(0);
      expect(done.revoked).toBeLessThan(2 * GRANTS);
      const events = await pending();
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({ scope: 'client', clientId: 'app', reason: 'revoked' });
      // Resumed: it goes on, and its batches tell too; nothing is lost, nothing of the first doubled.
      const rest = await env.engine.revokeBulk({ clientId: 'app' }, 'cli:op', { batchSize: BATCH });
      expect(done.revoked + rest.revoked).toBe(2 * GRANTS);
      const after = await pending();
      expect(after.length).toBeGreaterThan(1);
      expect(after[0]).toEqual(events[0]);
      expect(new Set(after.map((e) => e.id)).size).toBe(after.length);
      for (const e of after) expect(e).toMatchObject({ scope: 'client', clientId: 'app' });
    });

    it('a store error in its second batch: the first batch and its one event stay committed', async () => {
      const real = env.store.revokeBulk.bind(env.store);
      let calls = 0;
      env.store.revokeBulk = async (...args) => {
        if (++calls > 1) throw new Error('the disk went away');
        return real(...args);
      };
      const error = await env.engine.revokeBulk({ username: 'alice' }, 'cli:op', { batchSize: BATCH }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PartialBulkRevocationError);
      const revoked = (error as PartialBulkRevocationError).revoked;
      expect(revoked).toBeGreaterThan(0);
      expect(revoked).toBeLessThan(2 * GRANTS);
      expect(await env.engine.countBulk({ username: 'alice' })).toBe(2 * GRANTS - revoked);
      const events = await pending();
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({ scope: 'user', username: 'alice', reason: 'revoked' });
      expect(events[0]!.clientId).toBeUndefined();
    });
  });
}
