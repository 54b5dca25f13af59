import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { makeClient, makeToken, T0 } from '../helpers/records.js';

/**
 * A server's writes while another process holds SQLite's write lock (a CLI bulk revocation or
 * purge, a batch at a time): they used to wait in SQLite's busy handler, which sleeps on the
 * event loop's thread, so every request of the server stalled with them, up to the 5 s busy
 * timeout. They now wait off the event loop, and a bulk write leaves gaps between its batches.
 */
describe('a server store waiting for another process\'s write lock', () => {
  let dir: string;
  let server: SqliteStore;
  let other: Database.Database;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tokenctl-lock-wait-'));
    const file = join(dir, 'tokens.db');
    await (await SqliteStore.open(file)).close();
    server = await SqliteStore.open(file, { syncOffLoop: true });
    await server.createClient(makeClient({ id: 'app' }), {});
    other = new Database(file, { timeout: 5000 });
  });
  afterEach(async () => {
    other.close();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps the event loop turning and reads answered, and writes once the lock is free', async () => {
    other.exec('BEGIN IMMEDIATE');
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 5);
    const release = new Promise<void>((resolve) =>
      setTimeout(() => {
        other.exec('COMMIT');
        resolve();
      }, 300),
    );
    const started = Date.now();
    let readDuringWait = false;
    const written = server.insertTokens([makeToken({ jti: 'j-1', digest: 'd-1', clientId: 'app', issuedAt: T0 })]);
    // A read issued while the write waits is answered before the lock is released.
    const read = server.getClient('app').then((c) => (readDuringWait = c?.id === 'app' && Date.now() - started < 250));
    await Promise.all([written, read, release]);
    clearInterval(ticker);
    expect(readDuringWait).toBe(true);
    // The loop ran all along (blocked in the busy handler it would have ticked 0 times).
    expect(ticks).toBeGreaterThan(5);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(await server.findTokenByDigest('d-1')).toMatchObject({ jti: 'j-1' });
  });

  it('keeps the order of the writes queued behind a waiting one', async () => {
    other.exec('BEGIN IMMEDIATE');
    const first = server.insertTokens([makeToken({ jti: 'j-a', digest: 'd-a', clientId: 'app' })]);
    await new Promise((r) => setTimeout(r, 30));
    // Another turn's write, while the first still waits: behind it, and committed with it.
    const second = server.insertTokens([makeToken({ jti: 'j-a2', digest: 'd-a', clientId: 'app' })]);
    setTimeout(() => other.exec('COMMIT'), 100);
    await first;
    await expect(second).rejects.toThrow(); // the same digest: refused because the first went in first
  });
});
