import { copyFileSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempStore, type TempStore } from '../helpers/cli.js';
import { runCommand } from '../helpers/run-command.js';

/** Stores that cannot be used: a clear error, a non-zero exit, nothing written. */
describe('store errors', () => {
  let store: TempStore;
  beforeAll(async () => {
    store = tempStore({ inProcess: true });
    await store.json(['status']); // creates a valid store
  });
  afterAll(() => store.cleanup());

  it('a missing database directory', async () => {
    const db = join(store.dir, 'no', 'such', 'dir', 'tokens.db');
    const r = await runCommand(['client', 'create', '--name', 'x', '--db', db]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/does not exist/);
    expect(r.stderr).not.toMatch(/unexpected error/);
    expect(r.stdout).toBe('');
    expect(existsSync(join(store.dir, 'no'))).toBe(false);
  });

  it('a file that is not a database, and another application’s SQLite database, are left untouched', async () => {
    const text = join(store.dir, 'notes.txt');
    writeFileSync(text, 'hello, not a database\n');
    const other = join(store.dir, 'other.db');
    const odb = new Database(other);
    odb.exec('CREATE TABLE songs (title TEXT)');
    odb.close();
    const [a, b] = await Promise.all([runCommand(['status', '--db', text]), runCommand(['status', '--db', other, '--json'])]);
    expect(a.code).toBe(1);
    expect(a.stderr).toMatch(/is not a tokenctl store/);
    expect(a.stderr).toMatch(/Hint:/);
    expect(b.code).toBe(1);
    expect(b.stdout).toBe('');
    expect(JSON.parse(b.stderr).error).toMatchObject({ code: 'not_a_store' });
    const check = new Database(other, { readonly: true });
    expect(check.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all()).toEqual([{ name: 'songs' }]);
    check.close();
  });

  it('a store written by a newer tokenctl', async () => {
    const newer = join(store.dir, 'newer.db');
    copyFileSync(store.db, newer);
    const db = new Database(newer);
    db.pragma('user_version = 999');
    db.close();
    const r = await runCommand(['client', 'create', '--name', 'x', '--db', newer]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/schema version 999/);
    expect(r.stderr).toMatch(/upgrade tokenctl/);
  });

  it('TOKENCTL_DB is used when --db is not given', async () => {
    const r = await runCommand(['status', '--json'], { env: { TOKENCTL_DB: store.db } });
    expect(r.code).toBe(0);
    expect(r.json().store).toBe(store.db);
  });

  it('errors under --json are one JSON document on stderr, with nothing on stdout', async () => {
    const r = await store.run(['client', 'show', 'ghost', '--json']);
    expect(r.code).toBe(4);
    expect(r.stdout).toBe('');
    expect(JSON.parse(r.stderr)).toEqual({ error: { code: 'not_found', message: expect.stringContaining('ghost') } });
  });
});
