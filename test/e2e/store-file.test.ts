import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { BIN } from '../helpers/cli.js';
import { killAllChildren, startServe, SystemTimeClock, tempDir } from '../helpers/load.js';

/**
 * Hardening item 7 of SECURITY.md: `serve` and its store file. It refuses a store it cannot write,
 * and stops with a clear error when the file is deleted or replaced under it (the CLI would act on
 * the new file and the server on the old one).
 */
describe('serve and its store file', { timeout: 60_000 }, () => {
  const tmp = tempDir('tokenctl-store-file-');
  let n = 0;
  async function newStore(): Promise<string> {
    const db = join(tmp.dir, `tokens-${++n}.db`);
    const store = await SqliteStore.open(db);
    try {
      await new Engine({ store, clock: new SystemTimeClock() }).createClient({ id: 'web', name: 'web' }, 'cli:test');
    } finally {
      await store.close();
    }
    return db;
  }
  afterAll(async () => {
    await killAllChildren();
    tmp.cleanup();
  });

  for (const [name, change] of [
    ['replaced (renamed aside, a copy put in its place)', (db: string) => (renameSync(db, db + '.old'), copyFileSync(db + '.old', db))],
    ['deleted', (db: string) => rmSync(db)],
  ] as const) {
    it(`a store file ${name} while serving: serve stops with an error naming it`, async () => {
      const db = await newStore();
      const serve = await startServe(['--db', db, '--log-level', 'warn']);
      change(db);
      const started = Date.now();
      const exit = await Promise.race([serve.exited, new Promise<null>((r) => setTimeout(() => r(null), 10_000))]);
      expect(exit, serve.stderr()).toEqual({ code: 1, signal: null });
      expect(Date.now() - started).toBeLessThan(8_000);
      expect(serve.stderr()).toContain(`the store file ${db} was`);
    });
  }

  it('a store it cannot write: serve refuses to start, and says why', async () => {
    const db = await newStore();
    // A read-only store: the immutable attribute (root can still write a file of mode 0444).
    const immutable = spawnSync('chattr', ['+i', db]);
    if (immutable.status !== 0) {
      console.warn(`skipped: chattr +i is not available here (${immutable.stderr?.toString().trim() || immutable.error?.message})`);
      return;
    }
    try {
      const child = spawn(process.execPath, [BIN, 'serve', '--db', db, '--port', '0', '--log-level', 'warn'], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (out += d.toString()));
      const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      const code = await new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
      clearTimeout(killer);
      // Refused when the store is opened (exit 2, the store's location at fault), before serving.
      expect(code, out).toBe(2);
      expect(out).toContain(`the store ${db} cannot be written by this user`);
      expect(out).not.toContain('listening on');
    } finally {
      spawnSync('chattr', ['-i', db]);
    }
  });
});
