import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BackgroundCheckpointer } from '../../src/store/sqlite/checkpointer.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { makeClient, makeToken, T0 } from '../helpers/records.js';

/** WAL checkpoints on a thread of their own (serve): no request waits behind one on the event loop. */
describe('SqliteStore with backgroundCheckpoints', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tokenctl-checkpoint-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** Writes `n` tokens in commits of 100 and says how the database file and its WAL grew. */
  async function written(store: SqliteStore, file: string, n: number): Promise<{ db: number; wal: number }> {
    await store.createClient(makeClient({ id: 'c' }), {});
    const before = statSync(file).size;
    for (let i = 0; i < n; i += 100) await store.insertTokens(Array.from({ length: 100 }, () => makeToken({ clientId: 'c' })));
    return { db: statSync(file).size - before, wal: statSync(`${file}-wal`).size };
  }

  it('copies the WAL into the database file on its own thread, where a commit would not have yet', async () => {
    const plain = join(dir, 'plain.db');
    const background = join(dir, 'background.db');
    const a = await SqliteStore.open(plain);
    // At least every 200 ms here (5 s by default): what the thread does when the WAL holds few pages.
    const b = await SqliteStore.open(background, { backgroundCheckpoints: true, checkpointMaxIntervalMs: 200 });
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

  it('bounds the WAL when the thread falls behind: past 4 × its pages, the store\'s own commits checkpoint', async () => {
    const file = join(dir, 'behind.db');
    // The thread checkpoints at 100 pages; stopped at once, as a thread starved by a busy server.
    const store = await SqliteStore.open(file, { backgroundCheckpoints: true, checkpointPages: 100 });
    try {
      await (store as unknown as { checkpointer: BackgroundCheckpointer }).checkpointer.stop();
      await written(store, file, 20_000);
      const pages = statSync(`${file}-wal`).size / (4096 + 24);
      // Without the bound, every page written since the open is in the WAL (thousands).
      expect(pages).toBeGreaterThan(0);
      expect(pages).toBeLessThan(4 * 100 + 400); // the high-water mark and one commit of 100 tokens
      expect((await store.stats(T0)).tokens.access_token.active).toBe(20_000);
    } finally {
      await store.close();
    }
  });

  it.runIf(process.platform === 'linux')('runs the thread at the lowest priority (nice 19), the event loop as it was', async () => {
    const niceOf = (task: string) => {
      const stat = readFileSync(`/proc/self/task/${task}/stat`, 'utf8');
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]); // field 19: nice
    };
    const before = new Set(readdirSync('/proc/self/task'));
    const store = await SqliteStore.open(join(dir, 'nice.db'), { backgroundCheckpoints: true });
    try {
      const deadline = Date.now() + 10_000;
      let niced: string[] = [];
      while (niced.length === 0 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        niced = readdirSync('/proc/self/task').filter((t) => !before.has(t) && niceOf(t) === 19);
      }
      expect(niced).toHaveLength(1);
      expect(niceOf(String(process.pid))).toBe(0);
    } finally {
      await store.close();
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
