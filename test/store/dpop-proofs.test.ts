import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/engine/clock.js';
import { Engine } from '../../src/engine/engine.js';
import { InvalidDpopProofError } from '../../src/engine/errors.js';
import { MemoryStore } from '../../src/store/memory/index.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import type { TokenStore } from '../../src/store/store.js';
import { dpopKey, makeProof } from '../helpers/dpop.js';
import { addClient, credentialsOf, issueFor, settle, START } from '../helpers/engine.js';
import { runNode } from '../helpers/node-script.js';
import { dropSchema, PG_SKIP_MESSAGE, PG_URL, testSchemaName } from '../helpers/pg.js';

/**
 * The DPoP replay cache (store/ports/dpop-proofs.ts) on every store, and a proof replayed to a
 * second node (PostgreSQL) or a second process (SQLite) over the same store: refused.
 */
const T = 1_700_000_000_000;

/** Two handles on one store (two nodes or processes), and how to drop it. */
interface Pair {
  a: TokenStore;
  b: TokenStore;
  close(): Promise<void>;
}

const dir = mkdtempSync(path.join(tmpdir(), 'tokenctl-dpop-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const kinds: { name: string; skip?: string; open: () => Promise<Pair> }[] = [
  {
    name: 'memory',
    open: async () => {
      const m = new MemoryStore();
      return { a: m, b: m, close: () => m.close() };
    },
  },
  {
    name: 'SQLite (two connections to one file)',
    open: async () => {
      const file = path.join(dir, `${Math.random().toString(36).slice(2)}.db`);
      const a = await SqliteStore.open(file);
      const b = await SqliteStore.open(file);
      return { a, b, close: async () => (await a.close(), await b.close()) };
    },
  },
  {
    name: 'PostgreSQL (two stores on one schema)',
    skip: PG_URL === undefined ? PG_SKIP_MESSAGE : undefined,
    open: async () => {
      const schema = testSchemaName();
      const a = await PostgresStore.open(PG_URL!, { schema });
      const b = await PostgresStore.open(PG_URL!, { schema });
      return { a, b, close: async () => (await a.close(), await b.close(), await dropSchema(PG_URL!, schema)) };
    },
  },
];

for (const kind of kinds) {
  describe.skipIf(kind.skip !== undefined)(`DPoP proofs seen: ${kind.name}`, () => {
    if (kind.skip) console.log(kind.skip);
    let pair: Pair;
    beforeAll(async () => {
      pair = await kind.open();
      return () => pair.close();
    });

    it('insert-if-absent: the first remember is true, the same key again false, on either handle', async () => {
      expect(await pair.a.rememberDpopProof('k1', T + 75_000, T)).toBe(true);
      expect(await pair.a.rememberDpopProof('k1', T + 75_000, T + 1)).toBe(false);
      expect(await pair.b.rememberDpopProof('k1', T + 75_000, T + 2)).toBe(false);
      // Past its window the entry is reused: the proof itself would be refused for its iat anyway.
      expect(await pair.b.rememberDpopProof('k1', T + 200_000, T + 75_000)).toBe(true);
    });

    it('of concurrent remembers of one key on two handles, exactly one is true', async () => {
      const all = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? pair.a : pair.b).rememberDpopProof('k-race', T + 75_000, T)));
      expect(all.filter(Boolean)).toHaveLength(1);
    });

    it('bounded in time: purge deletes what is past its window, and a remember sweeps a few', async () => {
      for (let i = 0; i < 5; i++) await pair.a.rememberDpopProof(`old-${i}`, T + 1000, T);
      await pair.a.rememberDpopProof('live', T + 1_000_000, T);
      // Each remember deletes up to two expired entries beside it (memory: past its sweep size).
      await pair.b.rememberDpopProof('new', T + 200_000, T + 100_000);
      const purged = await pair.a.purgeDpopProofs(T + 100_000, 1000);
      expect(purged).toBeGreaterThanOrEqual(kind.name === 'memory' ? 5 : 3);
      expect(await pair.a.purgeDpopProofs(T + 100_000, 1000)).toBe(0);
      expect(await pair.b.rememberDpopProof('live', T + 1_000_000, T + 100_001)).toBe(false);
    });

    it('a proof accepted by one engine is refused by another over the same store: nothing issued', async () => {
      const clock = new ManualClock(START);
      const one = new Engine({ store: pair.a, clock, issuer: 'https://auth.example.test' });
      const two = new Engine({ store: pair.b, clock, issuer: 'https://auth.example.test' });
      const app = await addClient(pair.a, { id: `app-${Math.random().toString(36).slice(2)}` });
      const issued = await issueFor(one, app);
      const key = await dpopKey();
      const dpop = { header: await makeProof(key, { iatMs: clock.now() }), method: 'POST', url: 'https://auth.example.test/oauth/token' };
      const ask = (e: Engine) => e.tokenAsClient({ grant: e.tokenRequest({ grant_type: 'refresh_token', refresh_token: issued.refresh_token }), credentials: credentialsOf(app), dpop });
      expect((await ask(one)).result.token_type).toBe('DPoP');
      const before = await pair.b.countTokens({ clientId: app.id });
      const replayed = await settle(ask(two));
      expect((replayed as { error: unknown }).error).toBeInstanceOf(InvalidDpopProofError);
      expect((replayed as { error: InvalidDpopProofError }).error.reason).toBe('replayed');
      expect(await pair.b.countTokens({ clientId: app.id })).toBe(before);
    });
  });
}

describe('DPoP proofs seen: SQLite, another process', () => {
  it('a proof remembered by another process on the file is a replay here', async () => {
    const file = path.join(dir, 'processes.db');
    const here = await SqliteStore.open(file);
    try {
      const script = `
        const { SqliteStore } = await import(process.env.STORE_MODULE);
        const store = await SqliteStore.open(process.env.DB);
        process.stdout.write(String(await store.rememberDpopProof('from-child', ${T + 75_000}, ${T})));
        await store.close();`;
      const child = await runNode(script, { DB: file });
      expect(child.stderr.trim()).toBe('');
      expect(child.stdout).toBe('true');
      expect(await here.rememberDpopProof('from-child', T + 75_000, T + 10)).toBe(false);
    } finally {
      await here.close();
    }
  });
});
