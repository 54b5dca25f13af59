import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BackgroundCheckpointer } from '../../src/store/sqlite/checkpointer.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { makeClient, makeToken, T0 } from '../helpers/records.js';

/** WAL checkpoints on a thread of their own (serve): bench/PERF-LOG.md 19. */
describe('SqliteStore with backgroundCheckpoints', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tokenctl-checkpoint-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** Writes `n` tokens in commits of 100 and says how the database file and its WAL grew. */
  async function written(store: SqliteStore, file: string, n: number): Promise<{ db: number; wal: number }> {
    await store.createClient(makeClient({ id: 'c' }));
    const before = statSync(file).size;
    for (let i = 0; i < n; i += 100) await store.insertTokens(Array.from({ length: 100 }, () => makeToken({ clientId: 'c' })));
    return { db: statSync(file).size - before, wal: statSync(`${file}-wal`).size };
  }

  it('copies the WAL into the database file on its own thread, where a commit would not have yet', async () => {
    const plain = join(dir, 'plain.db');
    const background = join(dir, 'background.db');
    const a = await SqliteStore.open(plain);
    const b = await SqliteStore.open(background, { backgroundCheckpoints: true }); // at least every 5 s
    try {
      // 2,000 tokens are far fewer WAL pages than SQLite's automatic checkpoint waits for (10,000).
      expect((await written(a, plain, 2_000)).db).toBe(0);
      await written(b, background, 2_000);
      const deadline = Date.now() + 15_000;
      while (statSync(background).size <= statSync(plain).size) {
        if (Date.now() > deadline) throw new Error('no checkpoint within 15 s');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      // And the store is whole: every token is there.
      expect((await b.stats(T0)).tokens.access_token.active).toBe(2_000);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('a thread that cannot do its work says so once (the store then lets SQLite checkpoint again)', async () => {
    const failures: unknown[] = [];
    const checkpointer = new BackgroundCheckpointer(join(dir, 'no-such-directory', 'x.db'), (error) => failures.push(error), { frames: 10_000 });
    const deadline = Date.now() + 10_000;
    while (failures.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(failures).toHaveLength(1);
    await checkpointer.stop();
  });

  it('close stops the thread and then checkpoints what is left, as the last connection', async () => {
    const file = join(dir, 'closing.db');
    const store = await SqliteStore.open(file, { backgroundCheckpoints: true });
    await written(store, file, 500);
    await store.close();
    // The last connection to close checkpoints and removes the WAL.
    expect(() => statSync(`${file}-wal`)).toThrow();
    const reopened = await SqliteStore.open(file, { create: false });
    expect((await reopened.stats(T0)).tokens.access_token.active).toBe(500);
    await reopened.close();
  });
});
