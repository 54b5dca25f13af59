import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { APPLICATION_ID, LATEST_SCHEMA_VERSION, MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { openFile } from '../../src/store/sqlite/open.js';
import { prepareStatements } from '../../src/store/sqlite/statements.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { NotAStoreError, SchemaTooNewError, StoreUnavailableError, type TokenRecord } from '../../src/store/store.js';
import { runNode } from '../helpers/node-script.js';
import { HOUR, MINUTE, T0, makeClient, makeGrant, makeToken, revokeAllBulk } from '../helpers/records.js';
import { describeStoreContract, type StoreFactory } from './contract.js';
import { describeEventStoreContract } from './events-contract.js';


function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'tokenctl-store-'));
}

const factory: StoreFactory = async () => {
  const dir = tempDir();
  const store = await SqliteStore.open(path.join(dir, 'tokens.db'));
  return {
    store,
    cleanup: async () => {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
};

describeStoreContract('SqliteStore', factory);
describeEventStoreContract('SqliteStore', factory);

/** The store's own connection, for the one test that must shorten its busy timeout. */
const connectionOf = (store: SqliteStore) => (store as unknown as { db: Database.Database }).db;
/** Runs `read` on a connection of its own to `file` (read-only), then closes it. */
function readFile<T>(file: string, read: (db: Database.Database) => T): T {
  const db = new Database(file, { readonly: true });
  try {
    return read(db);
  } finally {
    db.close();
  }
}
const mode = (file: string) => fs.statSync(file).mode & 0o777;

describe('SqliteStore on disk', () => {
  let dir: string;
  let file: string;
  beforeEach(() => {
    dir = tempDir();
    file = path.join(dir, 'tokens.db');
  });
  afterEach(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a change and its audit line commit together: an audit insert that fails leaves the old key current, and no client made', async () => {
    const store = await SqliteStore.open(file);
    try {
      const key = (kid: string, createdAt: number) => ({ kid, alg: 'ES256', privateJwk: '{}', publicJwk: '{}', createdAt, retiredAt: null });
      const line = { at: T0 + HOUR, actor: 'serve:n1', action: 'signing_key.rotate', target: 'key:k2', count: 1, detail: 'ES256' };
      await store.addSigningKey(key('k1', T0), null, {});
      // Another connection makes the audit table refuse every line.
      const other = new Database(file);
      other.exec("CREATE TRIGGER audit_refuses BEFORE INSERT ON audit BEGIN SELECT RAISE(ABORT, 'audit refused'); END");
      await expect(store.addSigningKey(key('k2', T0 + HOUR), 'k1', { audit: line })).rejects.toThrow(/audit refused/);
      expect((await store.listSigningKeys()).map((k) => [k.kid, k.retiredAt])).toEqual([['k1', null]]);
      // So does an operator's client: no client without its line.
      await expect(store.createClient(makeClient({ id: 'client-9' }), { audit: { ...line, action: 'client.create', target: 'client:client-9' } })).rejects.toThrow(/audit refused/);
      expect(await store.getClient('client-9')).toBeNull();
      other.exec('DROP TRIGGER audit_refuses');
      other.close();
      expect(await store.addSigningKey(key('k2', T0 + HOUR), 'k1', { audit: line })).toBe(true);
      expect((await store.listSigningKeys()).map((k) => [k.kid, k.retiredAt])).toEqual([['k2', null], ['k1', T0 + HOUR]]);
      expect((await store.listAudit({})).map((a) => a.target)).toEqual(['key:k2']);
    } finally {
      await store.close();
    }
  });

  it('creates the file and its -wal and -shm files readable by the owner only', async () => {
    const store = await SqliteStore.open(file);
    await store.createClient(makeClient({ id: 'client-1' }), {}); // a write, so the WAL is in use
    try {
      expect(mode(file)).toBe(0o600);
      expect(mode(`${file}-wal`)).toBe(0o600);
      expect(mode(`${file}-shm`)).toBe(0o600);
    } finally {
      await store.close();
    }
  });

  it('opens with WAL, synchronous=FULL (NORMAL for a server, see below), a busy timeout and foreign keys', () => {
    // A server's connection waits for the lock in its group commit, off the event loop (sqlite-lock-wait.test.ts).
    for (const [syncOffLoop, synchronous, busy] of [[false, 2, 1000], [true, 1, 20]] as const) {
      const { db } = openFile(file, { syncOffLoop });
      try {
        expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
        expect(db.pragma('synchronous', { simple: true })).toBe(synchronous); // 2 FULL, 1 NORMAL
        expect(db.pragma('busy_timeout', { simple: true })).toBeGreaterThanOrEqual(busy);
        expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
      } finally {
        db.close();
      }
    }
  });

  it('a store opened for a server (syncOffLoop) commits with synchronous=NORMAL and syncs the WAL itself before acknowledging', async () => {
    const store = await SqliteStore.open(file, { syncOffLoop: true });
    const syncs = vi.spyOn(fs, 'fdatasync');
    try {
      await store.createClient(makeClient({ id: 'client-1' }), {});
      const grants = Array.from({ length: 20 }, () => makeGrant({ clientId: 'client-1' }));
      await Promise.all(grants.map((g) => store.insertTokens([g.refresh, g.access])));
      expect(syncs.mock.calls.length).toBeGreaterThanOrEqual(2);
      expect(syncs.mock.calls.length).toBeLessThanOrEqual(3); // the twenty shared a commit, and at most two syncs
      const other = new Database(file, { readonly: true });
      try {
        expect((other.prepare('SELECT count(*) AS n FROM tokens').get() as { n: number }).n).toBe(40);
      } finally {
        other.close();
      }
      const pending = store.revokeToken(grants[0]!.access.jti, T0 + MINUTE, false, {});
      await store.close(); // commits and syncs what was queued before it
      expect(await pending).toBe(true);
    } finally {
      syncs.mockRestore();
      await store.close();
    }
    const reopened = await SqliteStore.open(file);
    try {
      expect((await reopened.findTokenByJti((await reopened.listTokens({ limit: 1 }))[0]!.jti))).not.toBeNull();
      expect((await reopened.stats(T0)).tokens.access_token.revoked).toBe(1);
    } finally {
      await reopened.close();
    }
  });

  it('has location = the absolute path, and keeps data across reopening', async () => {
    const cwd = process.cwd();
    process.chdir(dir);
    let store: SqliteStore;
    let absolute: string;
    try {
      absolute = path.resolve('tokens.db');
      store = await SqliteStore.open('tokens.db');
    } finally {
      process.chdir(cwd);
    }
    expect(store.location).toBe(absolute);
    const { refresh, access } = makeGrant({ clientId: 'client-1' });
    await store.createClient(makeClient({ id: 'client-1' }), {});
    await store.insertTokens([refresh, access]);
    await store.revokeToken(access.jti, T0 + 1, false, {});
    await store.close();

    const again = await SqliteStore.open(file, { create: false });
    try {
      expect(await again.schemaVersion()).toBe(LATEST_SCHEMA_VERSION);
      expect(await again.findTokenByDigest(refresh.digest)).toEqual(refresh);
      expect((await again.findTokenByJti(access.jti))?.revokedAt).toBe(T0 + 1);
      const migrations = readFile(file, (db) => db.prepare('SELECT version FROM migrations ORDER BY version').all());
      expect(migrations).toEqual(MIGRATIONS.map((m) => ({ version: m.version })));
    } finally {
      await again.close();
    }
  });

  it('brings a version 1 store up to date on open, keeping its records (2 drops the unused audit index)', async () => {
    const store = await SqliteStore.open(file);
    await store.createClient(makeClient({ id: 'client-1' }), {});
    const t = makeToken({ clientId: 'client-1' });
    await store.insertTokens([t]);
    await store.appendAudit({ at: 1, actor: 'a', action: 'x', target: 't', count: 1, detail: '' });
    await store.close();
    const raw = new Database(file);
    // What versions 2 to 7 added goes, as in a store version 1 wrote.
    raw.exec(`CREATE INDEX audit_target ON audit (target); DROP TABLE dpop_proofs; ALTER TABLE tokens DROP COLUMN jkt; ALTER TABLE clients DROP COLUMN require_dpop;
      DROP TABLE poll_acks; DROP TABLE event_deliveries; DROP TABLE security_events; DROP TABLE signing_keys; DROP TABLE receivers;
      DROP TABLE authorizations; ALTER TABLE clients DROP COLUMN redirect_uris; ALTER TABLE clients DROP COLUMN grant_types;
      ALTER TABLE clients DROP COLUMN login_provider;
      DELETE FROM migrations WHERE version > 1; PRAGMA user_version = 1;`);
    raw.close();

    const again = await SqliteStore.open(file);
    try {
      expect(await again.schemaVersion()).toBe(LATEST_SCHEMA_VERSION);
      readFile(file, (db) => {
        expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'audit_target'").all()).toEqual([]);
        expect(db.prepare('SELECT version FROM migrations ORDER BY version').all()).toEqual(MIGRATIONS.map((m) => ({ version: m.version })));
      });
      expect(await again.findTokenByJti(t.jti)).toEqual(t);
      expect(await again.listAudit({})).toHaveLength(1);
    } finally {
      await again.close();
    }
  });

  it('brings a version 5 store up to date: its clients keep the refresh grant only, no redirect URI, no login', async () => {
    // A store as version 5 wrote it: migrations 1 to 5, and a client with the columns of then.
    const raw = new Database(file);
    raw.exec(MIGRATIONS.filter((m) => m.version <= 5).map((m) => m.sql).join('\n'));
    const record = raw.prepare('INSERT INTO migrations (version, name, applied_at) VALUES (?, ?, ?)');
    for (const m of MIGRATIONS.filter((m) => m.version <= 5)) record.run(m.version, m.name, 1);
    raw.prepare(`INSERT INTO clients (id, name, secret_hash, scope, org_id, audience, access_ttl_ms, refresh_ttl_ms, created_at, secret_updated_at)
      VALUES ('old-client', 'Old', NULL, 'read', 'org-1', 'https://api.example.test', NULL, 60000, 5, 6)`).run();
    raw.pragma(`application_id = ${APPLICATION_ID}`);
    raw.pragma('user_version = 5');
    raw.close();

    const store = await SqliteStore.open(file);
    try {
      expect(await store.schemaVersion()).toBe(LATEST_SCHEMA_VERSION);
      const old = {
        id: 'old-client', name: 'Old', secretHash: null, scope: 'read', orgId: 'org-1', audience: 'https://api.example.test',
        accessTtlMs: null, refreshTtlMs: 60000, createdAt: 5, secretUpdatedAt: 6, redirectUris: [], grantTypes: ['refresh_token'], loginProvider: false,
        requireDpop: false,
      };
      expect(await store.getClient('old-client')).toEqual(old);
      expect(await store.listClients()).toEqual([old]);
      // Its settings can be changed, and its requests stored, on the migrated schema.
      const settings = { redirectUris: ['https://old.example.test/cb'], grantTypes: ['authorization_code', 'refresh_token'], loginProvider: false, requireDpop: false };
      expect(await store.updateClientSettings('old-client', settings, {})).toBe(true);
      expect(await store.getClient('old-client')).toEqual({ ...old, ...settings });
      readFile(file, (db) => {
        expect(db.prepare('SELECT version FROM migrations ORDER BY version').all()).toEqual(MIGRATIONS.map((m) => ({ version: m.version })));
        expect(db.prepare("SELECT name FROM sqlite_master WHERE tbl_name = 'authorizations' AND type = 'index' AND sql IS NOT NULL ORDER BY name").all())
          .toEqual([{ name: 'authorizations_client' }, { name: 'authorizations_ended' }]);
      });
    } finally {
      await store.close();
    }
  });

  it('opens a current store without waiting for another connection’s write lock', async () => {
    (await SqliteStore.open(file)).close();
    const writer = new Database(file, { timeout: 5000 });
    writer.exec('BEGIN IMMEDIATE');
    try {
      const started = Date.now();
      const store = await SqliteStore.open(file);
      expect(await store.listClients()).toEqual([]);
      expect(Date.now() - started).toBeLessThan(2000); // not the 5 s busy timeout
      await store.close();
    } finally {
      writer.exec('ROLLBACK');
      writer.close();
    }
  });

  it('initialises an empty file, and makes it private', async () => {
    fs.writeFileSync(file, '');
    fs.chmodSync(file, 0o644);
    const store = await SqliteStore.open(file);
    expect(await store.listClients()).toEqual([]);
    expect(await store.schemaVersion()).toBe(LATEST_SCHEMA_VERSION);
    expect(mode(file)).toBe(0o600);
    await store.close();
  });

  it('refuses a text file with NotAStoreError and leaves it untouched', async () => {
    fs.writeFileSync(file, 'hello');
    await expect(SqliteStore.open(file)).rejects.toBeInstanceOf(NotAStoreError);
    expect(fs.readFileSync(file, 'utf8')).toBe('hello');
    expect(fs.readdirSync(dir)).toEqual(['tokens.db']);
  });

  it('refuses another application’s SQLite database and leaves it untouched', async () => {
    const foreign = new Database(file);
    foreign.exec("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('keep me')");
    foreign.close();
    const before = fs.readFileSync(file);
    await expect(SqliteStore.open(file)).rejects.toBeInstanceOf(NotAStoreError);
    await expect(SqliteStore.open(file)).rejects.toThrow(/not a tokenctl store/);
    expect(fs.readFileSync(file).equals(before)).toBe(true);
    const check = new Database(file, { readonly: true });
    expect(check.pragma('journal_mode', { simple: true })).toBe('delete');
    check.close();
  });

  it('refuses a database marked with another application id', async () => {
    const foreign = new Database(file);
    foreign.pragma('application_id = 1234');
    foreign.close();
    await expect(SqliteStore.open(file)).rejects.toBeInstanceOf(NotAStoreError);
  });

  it('refuses a store written by a newer schema with SchemaTooNewError', async () => {
    await (await SqliteStore.open(file)).close();
    const raw = new Database(file);
    raw.pragma(`user_version = ${LATEST_SCHEMA_VERSION + 1}`);
    raw.close();
    const opening = SqliteStore.open(file);
    await expect(opening).rejects.toBeInstanceOf(SchemaTooNewError);
    await expect(opening).rejects.toMatchObject({ found: LATEST_SCHEMA_VERSION + 1, supported: LATEST_SCHEMA_VERSION });
  });

  it('names a missing directory, says to create it, and creates nothing', async () => {
    const missing = path.join(dir, 'no', 'such');
    const opening = SqliteStore.open(path.join(missing, 'tokens.db'));
    await expect(opening).rejects.toThrow(missing);
    await expect(opening).rejects.toMatchObject({ hint: expect.stringMatching(/create it first \(mkdir -p /) });
    expect(fs.existsSync(path.join(dir, 'no'))).toBe(false);
  });

  it('with create: false, refuses a missing file and creates nothing', async () => {
    await expect(SqliteStore.open(file, { create: false })).rejects.toThrow(file);
    expect(fs.readdirSync(dir)).toEqual([]);
  });

  it('turns a lock held past the busy timeout into StoreUnavailableError', async () => {
    const store = await SqliteStore.open(file);
    await store.createClient(makeClient({ id: 'client-1' }), {});
    const token = makeToken({ clientId: 'client-1' });
    await store.insertTokens([token]);
    connectionOf(store).pragma('busy_timeout = 50'); // keep the test short
    const other = new Database(file);
    other.exec('BEGIN IMMEDIATE');
    try {
      await expect(store.revokeToken(token.jti, T0, false, {})).rejects.toBeInstanceOf(StoreUnavailableError);
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    expect(await store.revokeToken(token.jti, T0, false, {})).toBe(true);
    await store.close();
  });

  it('lets two instances on one file interleave writes', async () => {
    const a = await SqliteStore.open(file);
    const b = await SqliteStore.open(file);
    await a.createClient(makeClient({ id: 'client-1' }), {});
    const tokens = Array.from({ length: 200 }, () => makeToken({ clientId: 'client-1' }));
    await Promise.all(
      tokens.map(async (t, i) => {
        const [writer, reviser] = i % 2 === 0 ? [a, b] : [b, a];
        await writer.insertTokens([t]);
        expect(await reviser.revokeToken(t.jti, T0 + i, false, {})).toBe(true);
      }),
    );
    expect((await a.stats(T0)).tokens.access_token.revoked).toBe(200);
    expect((await b.findTokenByDigest(tokens[7]!.digest))?.revokedAt).toBe(T0 + 7);
    await a.close();
    await b.close();
  });

  it('lets separate processes write one file at the same time', async () => {
    const main = await SqliteStore.open(file);
    await main.createClient(makeClient({ id: 'client-1' }), {});
    // Each child inserts 150 tokens of its own user; p2 and p3 revoke every second one as they go,
    // while this process keeps revoking p1's in bulk.
    const script = `
      const { SqliteStore } = await import(process.env.STORE_MODULE);
      const { randomUUID } = await import('node:crypto');
      const store = await SqliteStore.open(process.env.DB);
      for (let i = 0; i < 150; i++) {
        const jti = randomUUID();
        await store.insertTokens([{ jti, digest: jti, type: 'access_token', grantId: jti, clientId: 'client-1',
          username: process.env.WHO, sub: 's', scope: '', audience: '', orgId: '', node: '', issuedAt: 1, notBefore: 1,
          expiresAt: 9e12, revokedAt: null, replacedAt: null, replacedBy: null }]);
        if (process.env.WHO !== 'p1' && i % 2 === 0 && !(await store.revokeToken(jti, 2, true, {}))) throw new Error('lost a revocation');
      }
      await store.close();`;
    const children = ['p1', 'p2', 'p3'].map((who) => runNode(script, { DB: file, WHO: who }));
    let revokedHere = 0;
    for (let i = 0; i < 100; i++) revokedHere += await revokeAllBulk(main, { username: 'p1' }, 3);
    const results = await Promise.all(children);
    expect(results.map((r) => r.stderr.trim())).toEqual(['', '', '']);
    expect(results.map((r) => r.code)).toEqual([0, 0, 0]);
    revokedHere += await revokeAllBulk(main, { username: 'p1' }, 3);
    expect(revokedHere).toBe(150); // every p1 token revoked exactly once, none missed
    expect(await main.countRevocable({ username: 'p2' }, T0)).toBe(75);
    expect(await main.countRevocable({ username: 'p3' }, T0)).toBe(75);
    expect((await main.stats(T0)).tokens.access_token.revoked).toBe(300);
    await main.close();
  });

  it('applies the migrations once when several processes create the file at once', async () => {
    const script = `
      const { SqliteStore } = await import(process.env.STORE_MODULE);
      const store = await SqliteStore.open(process.env.DB);
      await store.createClient({ id: process.env.WHO, name: 'n', secretHash: null, scope: '', orgId: '', audience: '',
        accessTtlMs: null, refreshTtlMs: null, createdAt: 1, secretUpdatedAt: 1, redirectUris: [], grantTypes: ['refresh_token'], loginProvider: false, requireDpop: false }, {});
      await store.close();`;
    // Several rounds on fresh files: two processes switching a new file to WAL at once used to
    // deadlock until the busy timeout ("locked by another process"), depending on timing.
    const who = ['c1', 'c2', 'c3', 'c4', 'c5'];
    for (const round of [1, 2, 3]) {
      const db = path.join(dir, `round-${round}.db`);
      const results = await Promise.all(who.map((id) => runNode(script, { DB: db, WHO: id })));
      expect(results.map((r) => r.stderr.trim())).toEqual(who.map(() => ''));
      const store = await SqliteStore.open(db, { create: false });
      expect((await store.listClients()).map((c) => c.id).sort()).toEqual(who);
      expect(readFile(db, (raw) => raw.prepare('SELECT count(*) AS n FROM migrations').get())).toEqual({ n: MIGRATIONS.length });
      expect(mode(db)).toBe(0o600);
      await store.close();
    }
  });

  it('revokes 100,000 tokens of one user in bulk, and only those', async () => {
    const store = await SqliteStore.open(file);
    await store.createClient(makeClient({ id: 'client-1' }), {});
    const mass: TokenRecord[] = [];
    for (let i = 0; i < 50_000; i++) {
      const g = makeGrant({ clientId: 'client-1', username: 'mass' });
      mass.push(g.refresh, g.access);
    }
    const expired = makeToken({ clientId: 'client-1', username: 'mass', expiresAt: T0 - HOUR });
    const bystanders = Array.from({ length: 1000 }, () => makeToken({ clientId: 'client-1', username: 'other' }));
    await store.insertTokens([...mass, expired, ...bystanders]);
    expect(await store.countRevocable({ username: 'mass' }, T0)).toBe(100_000);
    expect(await revokeAllBulk(store, { username: 'mass' }, T0)).toBe(100_000);
    expect(await store.countRevocable({ username: 'mass' }, T0)).toBe(0);
    expect((await store.findTokenByJti(expired.jti))?.revokedAt).toBeNull();
    expect(await store.countRevocable({ username: 'other' }, T0)).toBe(1000);
    const stats = await store.stats(T0);
    expect(stats.tokens.access_token.revoked + stats.tokens.refresh_token.revoked).toBe(100_000);
    await store.close();
  });

  it('serves bulk revocation, lookups and purging from indexes, not table scans', async () => {
    const store = await SqliteStore.open(file);
    const db = new Database(file);
    const st = prepareStatements(db) as unknown as Record<string, unknown> & { bulk: Record<string, { revoke: Database.Statement }> };
    const named = { at: 1, before: 1, limit: 1, username: 'u', clientId: 'c', jti: 'j' };
    const plan = (statement: unknown, params: unknown = named) =>
      (db.prepare(`EXPLAIN QUERY PLAN ${(statement as Database.Statement).source}`).all(params) as { detail: string }[])
        .map((r) => r.detail)
        .join(' | ');
    for (const kind of ['jti', 'user', 'userClient', 'client']) expect(plan(st.bulk[kind]!.revoke)).not.toMatch(/SCAN tokens/);
    for (const name of ['purge', 'countPurgeable']) expect(plan(st[name])).not.toMatch(/SCAN tokens/);
    expect(plan(st.byDigest, 'd')).toMatch(/USING INDEX/);
    db.close();
    await store.close();
  });
});

describe('SqliteStore group commit', () => {
  let dir: string;
  let store: SqliteStore;
  /** What the store told its observer: row-cache lookups (hit or not) and commit sizes. */
  let told: { rowCache: boolean[]; commitBatch: number[] };
  beforeEach(async () => {
    dir = tempDir();
    told = { rowCache: [], commitBatch: [] };
    const observer = { rowCache: (hit: boolean) => told.rowCache.push(hit), commitBatch: (size: number) => told.commitBatch.push(size) };
    store = await SqliteStore.open(path.join(dir, 'tokens.db'), { observer });
    await store.createClient(makeClient({ id: 'client-1' }), {});
  });
  afterEach(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a client row kept between reads is read again once another connection changed it', async () => {
    const other = await SqliteStore.open(path.join(dir, 'tokens.db'));
    try {
      for (const read of [(id: string) => store.getClient(id), async (id: string) => (await store.findClientAndToken(id, null)).client]) {
        const before = (await read('client-1'))!.secretHash;
        expect(await read('client-1')).toMatchObject({ secretHash: before }); // kept
        const next = `hash-${Math.random()}`;
        await other.updateClientSecret('client-1', next, 2, {});
        expect(await read('client-1')).toMatchObject({ secretHash: next });
        await other.deleteClient('client-1', {});
        expect(await read('client-1')).toBeNull();
        await other.createClient(makeClient({ id: 'client-1' }), {});
      }
    } finally {
      await other.close();
    }
  });

  it('a token row kept between reads is handed out only while nobody has committed since', async () => {
    const grants = Array.from({ length: 4 }, () => makeGrant({ clientId: 'client-1', username: 'ann' }));
    await store.insertTokens(grants.flatMap((g) => [g.refresh, g.access]));
    // Rows are kept only once the store has been quiet for a while (no commit): let time pass.
    const realNow = Date.now.bind(Date);
    let later = 0;
    vi.spyOn(Date, 'now').mockImplementation(() => realNow() + later);
    const find = async (t: TokenRecord) => (await store.findClientAndToken('client-1', t.digest)).token;
    /** 1 if the token lookup of this one findClientAndToken (the last one told) went to the database. */
    const lookupsAfter = async (read: () => Promise<unknown>) => {
      const before = told.rowCache.length;
      await read();
      expect(told.rowCache.length).toBe(before + 2); // the client's lookup, then the token's
      return told.rowCache.at(-1) ? 0 : 1;
    };
    /** Reads `t` after quiet spells until a read is the kept row (no lookup); returns it. */
    const keptRead = async (t: TokenRecord) => {
      let previous: TokenRecord | null = null;
      for (let i = 0; i < 4; i++) {
        later += 1000;
        let got: TokenRecord | null = null;
        if ((await lookupsAfter(async () => (got = await find(t)))) === 0) {
          if (previous !== null) expect(got).toEqual(previous);
          return got as TokenRecord | null;
        }
        previous = got;
      }
      throw new Error('the token row was never kept');
    };
    const other = await SqliteStore.open(path.join(dir, 'tokens.db'));
    try {
      const [a, b, c, d] = grants.map((g) => g.access) as [TokenRecord, TokenRecord, TokenRecord, TokenRecord];
      // Kept on its second read, not its first (once the store was quiet and the last commit noted).
      later += 1000;
      await find(d);
      later += 1000;
      const reads: number[] = [];
      for (let i = 0; i < 3; i++) reads.push(await lookupsAfter(() => find(a)));
      expect(reads).toEqual([1, 1, 0]);

      const first = await keptRead(a);
      expect(first).toEqual(a);
      expect(() => (first!.scope = 'changed by the caller')).toThrow(TypeError); // frozen: shared by every reader
      expect((await find(a))!.scope).toBe(a.scope);

      // Another process's revocation: seen by the next read.
      await other.revokeToken(a.jti, T0 + MINUTE, false, {});
      expect((await find(a))!.revokedAt).toBe(T0 + MINUTE);
      // This connection's own writes (its commits do not move data_version): seen too.
      expect(await keptRead(b)).toEqual(b);
      await store.revokeToken(b.jti, T0 + MINUTE, false, {});
      expect((await find(b))!.revokedAt).toBe(T0 + MINUTE);
      expect(await keptRead(c)).toEqual(c);
      await revokeAllBulk(store, { username: 'ann' }, T0 + 2 * MINUTE);
      expect((await find(c))!.revokedAt).toBe(T0 + 2 * MINUTE);
      // Deleted by another process (its client deleted with its tokens): gone.
      expect(await keptRead(d)).toEqual({ ...d, revokedAt: T0 + 2 * MINUTE });
      await other.deleteClient('client-1', {});
      expect(await find(d)).toBeNull();
    } finally {
      vi.restoreAllMocks();
      await other.close();
    }
  });

  it('token reads made in one turn share one read transaction, which sees what others committed before', async () => {
    const grants = Array.from({ length: 20 }, () => makeGrant({ clientId: 'client-1' }));
    await store.insertTokens(grants.flatMap((g) => [g.refresh, g.access]));
    const other = await SqliteStore.open(path.join(dir, 'tokens.db'));
    try {
      await other.revokeToken(grants[7]!.access.jti, T0 + MINUTE, false, {});
      await other.updateClientSecret('client-1', 'hash-rotated', T0 + MINUTE, {});
      const answers = await Promise.all(grants.map((g) => store.findClientAndToken('client-1', g.access.digest)));
      // The client row was read once for the twenty (one transaction: the other's commits seen once).
      expect(told.rowCache.filter((hit, i) => i % 2 === 0 && !hit).length).toBe(1);
      expect(answers.map((a) => a.token?.jti)).toEqual(grants.map((g) => g.access.jti));
      expect(answers.every((a) => a.client?.secretHash === 'hash-rotated')).toBe(true);
      expect(answers.map((a) => a.token?.revokedAt ?? null)).toEqual(grants.map((_, i) => (i === 7 ? T0 + MINUTE : null)));
      // A read queued before close() is answered, not dropped.
      const last = store.findClientAndToken('client-1', grants[0]!.access.digest);
      await store.close();
      expect((await last).token?.jti).toBe(grants[0]!.access.jti);
      await expect(store.findClientAndToken('client-1', null)).rejects.toThrow(/closed/);
    } finally {
      vi.restoreAllMocks();
      await other.close();
    }
  });

  it('writes that arrive together share one commit, and each is visible to another connection once acknowledged', async () => {
    const file = path.join(dir, 'tokens.db');
    const grants = Array.from({ length: 100 }, (_, i) => makeGrant({ clientId: 'client-1', username: `u${i}` }));
    await store.insertTokens(grants.flatMap((g) => [g.refresh, g.access]));
    const checkpoint = () => {
      const raw = new Database(file);
      raw.pragma('wal_checkpoint(TRUNCATE)');
      raw.close();
    };
    checkpoint();
    const walSize = () => fs.statSync(`${file}-wal`).size;
    // 50 revocations one after another: a commit each, at least one WAL frame (a page) each.
    for (const g of grants.slice(0, 50)) await store.revokeToken(g.access.jti, T0 + HOUR, false, {});
    const sequential = walSize();
    checkpoint();
    // 50 revocations arriving together: one commit.
    const results = await Promise.all(grants.slice(50).map((g) => store.revokeToken(g.access.jti, T0 + HOUR, false, {})));
    const grouped = walSize();
    expect(results.every(Boolean)).toBe(true);
    expect(told.commitBatch.slice(-51)).toEqual([...Array<number>(50).fill(1), 50]); // the observer was told
    expect(sequential).toBeGreaterThan(50 * 4096);
    expect(grouped).toBeLessThan(sequential / 5);
    const other = new Database(file, { readonly: true });
    try {
      const revoked = other.prepare('SELECT count(*) AS n FROM tokens WHERE revoked_at IS NOT NULL').get() as { n: number };
      expect(revoked.n).toBe(100);
    } finally {
      other.close();
    }
  });

  it('a failing write in a batch rejects alone; the others of the batch commit', async () => {
    const a = makeGrant({ clientId: 'client-1' });
    const b = makeGrant({ clientId: 'client-1' });
    const clash = makeToken({ clientId: 'client-1', jti: a.access.jti }); // duplicate primary key
    const outcomes = await Promise.allSettled([
      store.insertTokens([a.refresh, a.access]),
      store.insertTokens([clash]),
      store.insertTokens([b.refresh, b.access]),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(await store.findTokenByJti(b.access.jti)).not.toBeNull();
    expect((await store.findTokenByJti(a.access.jti))?.digest).toBe(a.access.digest);
  });

  it('close() commits what was queued before it, so nothing acknowledged is lost', async () => {
    const g = makeGrant({ clientId: 'client-1' });
    const pending = store.insertTokens([g.refresh, g.access]);
    await store.close();
    await pending;
    const reopened = await SqliteStore.open(path.join(dir, 'tokens.db'));
    try {
      expect(await reopened.findTokenByJti(g.access.jti)).not.toBeNull();
    } finally {
      await reopened.close();
      store = reopened; // afterEach closes it again: close is idempotent
    }
  });
});
