import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { APPLICATION, LATEST_SCHEMA_VERSION, META_TABLE, MIGRATIONS } from '../../src/store/postgres/migrations.js';

/** The oldest schema version whose nodes run on a store this build migrated: its newest contract step's. */
const NODES_FROM = Math.max(...MIGRATIONS.map((m) => (m.change === 'expand' ? 0 : m.change.contract.nodesFrom)));
import { mapPgError, redactUrl } from '../../src/store/postgres/errors.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { revocableQuery } from '../../src/store/postgres/statements.js';
import { NotAStoreError, SchemaTooNewError, StoreUnavailableError, type TokenRecord } from '../../src/store/store.js';
import {
  PG_SKIP_MESSAGE,
  PG_URL,
  TcpProxy,
  dropSchema,
  insertGrantSeries,
  openTestStore,
  startSilentServer,
  testSchemaName,
  withPg,
} from '../helpers/pg.js';
import { HOUR, T0, makeClient, makeGrant, makeToken, revokeAllBulk } from '../helpers/records.js';
import { describeStoreContract } from './contract.js';
import { describeEventStoreContract } from './events-contract.js';

/** `url` with every transaction SERIALIZABLE: the store told so, and the connections' default too. */
const serializable = (url: string) => `${url}${url.includes('?') ? '&' : '?'}isolation=serializable&options=${encodeURIComponent('-c default_transaction_isolation=serializable')}`;

/** The store's own pool, to watch its connections. */
const poolOf = (store: PostgresStore) => (store as unknown as { db: { pool: Pool } }).db.pool;

if (!PG_URL) {
  console.warn(PG_SKIP_MESSAGE);
  it.skip(PG_SKIP_MESSAGE, () => undefined);
}

describe('PostgreSQL store errors (no database needed)', () => {
  const location = 'postgres://bob@db.example:5432/tokens';

  it('names a URL without its password, in the user info or the query', () => {
    expect(redactUrl('postgres://bob:s3cr%40t@db.example:5432/tokens?sslmode=require&password=p2')).toBe(
      'postgres://bob@db.example:5432/tokens?sslmode=require&password=***',
    );
    expect(redactUrl('postgresql://bob:s3cret@/tokens?host=/run/postgresql')).toBe('postgresql://bob@/tokens?host=/run/postgresql');
    expect(redactUrl('postgres://bob:pa@ss@db.example/tokens')).toBe('postgres://bob@db.example/tokens');
    expect(redactUrl('postgres://db.example/tokens')).toBe('postgres://db.example/tokens');
  });

  it.each([
    ['a refused connection', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }), /connection refused/],
    ['a refused connection on every address', Object.assign(new AggregateError([Object.assign(new Error(''), { code: 'ECONNREFUSED' })], ''), {}), /connection refused/],
    ['an administrator ending the connection', Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }), /administrator/],
    ['a lost connection', new Error('Connection terminated unexpectedly'), /connection was lost/],
    ['a connection timeout', new Error('timeout exceeded when trying to connect'), /connection timeout/],
    ['a statement timeout', Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' }), /timed out/],
  ])('turns %s into StoreUnavailableError naming the location', (_, error, reason) => {
    const mapped = mapPgError(error, location);
    expect(mapped).toBeInstanceOf(StoreUnavailableError);
    expect((mapped as Error).message).toContain(location);
    expect((mapped as Error).message).toMatch(reason);
    expect((mapped as Error).cause).toBe(error);
  });

  it('leaves other errors alone', () => {
    const unique = Object.assign(new Error('duplicate key'), { code: '23505' });
    const plain = new Error('syntax error');
    expect(mapPgError(unique, location)).toBe(unique);
    expect(mapPgError(plain, location)).toBe(plain);
  });
});

describe.skipIf(!PG_URL)('PostgresStore', () => {
  const url = PG_URL ?? '';

  describeStoreContract('PostgresStore', () => openTestStore(url));
  describeEventStoreContract('PostgresStore', () => openTestStore(url));
  // Every transaction SERIALIZABLE (a startup option: fine on a direct connection, not through PgBouncer).
  describeEventStoreContract('PostgresStore at SERIALIZABLE', () => openTestStore(serializable(url)));

  describe('on PostgreSQL', () => {
    /** Run after each test whatever happened in it: closing stores, dropping schemas. */
    let cleanups: (() => Promise<unknown>)[] = [];
    afterEach(async () => {
      for (const c of cleanups.reverse()) await c();
      cleanups = [];
    });
    /** A fresh schema name, dropped after the test. */
    const freshSchema = () => {
      const schema = testSchemaName();
      cleanups.push(() => dropSchema(url, schema));
      return schema;
    };
    /** Opens a store (another "node") on `schema`, closed after the test. */
    const node = async (schema: string, target = url) => {
      const store = await PostgresStore.open(target, { schema });
      cleanups.push(() => store.close());
      return store;
    };
    const tablesOf = (schema: string) =>
      withPg(url, undefined, async (db) =>
        (await db.query<{ t: string }>('SELECT tablename AS t FROM pg_tables WHERE schemaname = $1 ORDER BY 1', [schema])).rows.map((r) => r.t),
      );

    it('creates its schema, keeps everything in it, and keeps data across reopening', async () => {
      const schema = freshSchema();
      const a = await node(schema);
      expect(await tablesOf(schema)).toEqual(
        ['audit', 'authorizations', 'clients', 'dpop_proofs', 'event_deliveries', 'grants', 'migrations', 'receiver_leases', 'receivers', 'security_events', 'signing_keys', META_TABLE, 'tokens'].sort(),
      );
      await a.createClient(makeClient({ id: 'client-1' }), {});
      const { refresh, access } = makeGrant({ clientId: 'client-1' });
      await a.insertTokens([refresh, access]);
      await a.revokeToken(access.jti, T0 + 1, false, {});
      await a.close();

      const b = await node(schema);
      expect(await b.schemaVersion()).toBe(LATEST_SCHEMA_VERSION);
      expect(await b.findTokenByDigest(refresh.digest)).toEqual(refresh);
      expect((await b.findTokenByJti(access.jti))?.revokedAt).toBe(T0 + 1);
    });

    it('brings a version 1 schema up to date on open, keeping its records (2 drops the unused audit index, 3 adds a grant row per grant)', async () => {
      const schema = freshSchema();
      const a = await node(schema);
      await a.createClient(makeClient({ id: 'client-1' }), {});
      const old = makeGrant({ clientId: 'client-1', username: 'vera' });
      await a.insertTokens([old.refresh, old.access]);
      await a.close();
      await withPg(url, schema, (db) =>
        db.query(`CREATE INDEX audit_target ON audit (target); DROP TABLE grants, receivers, receiver_leases, security_events, event_deliveries, signing_keys;
          DROP FUNCTION find_clients_and_tokens; ALTER TABLE tokens ADD FOREIGN KEY (client_id) REFERENCES clients (id) ON DELETE CASCADE;
          DROP TABLE authorizations, dpop_proofs; ALTER TABLE clients DROP COLUMN redirect_uris, DROP COLUMN grant_types, DROP COLUMN login_provider, DROP COLUMN require_dpop;
          ALTER TABLE tokens DROP COLUMN jkt;
          DELETE FROM migrations WHERE version > 1; ALTER TABLE migrations DROP COLUMN change;
          DELETE FROM ${META_TABLE} WHERE key = 'applied_version';
          UPDATE ${META_TABLE} SET value = '1' WHERE key = 'schema_version'`),
      );
      const b = await node(schema);
      expect(await b.schemaVersion()).toBe(LATEST_SCHEMA_VERSION);
      expect((await b.listClients()).map((c) => c.id)).toEqual(['client-1']);
      // The lock that makes a grant's revocation final exists for the grants of before, too.
      const grants = await withPg(url, schema, async (db) => (await db.query('SELECT grant_id, client_id, username, revoked_at FROM grants')).rows);
      expect(grants).toEqual([{ grant_id: old.refresh.grantId, client_id: 'client-1', username: 'vera', revoked_at: null }]);
      expect(await b.revokeGrant(old.refresh.grantId, T0 + 1, {})).toBe(2);
      const late = makeToken({ clientId: 'client-1', grantId: old.refresh.grantId, username: 'vera' });
      expect(await b.insertMintedAccess(late, old.refresh.jti)).toBe('revoked');
      const indexes = await withPg(url, schema, async (db) => (await db.query("SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND indexname = 'audit_target'", [schema])).rows);
      expect(indexes).toEqual([]);
    });

    it('brings a version 7 schema up to date: its clients keep the refresh grant only, no redirect URI, no login, also in the batched read', async () => {
      // A schema as version 7 wrote it: migrations 1 to 7, and a client with the columns of then.
      const schema = freshSchema();
      await withPg(url, undefined, async (db) => {
        await db.query(`CREATE SCHEMA "${schema}"; SET search_path TO "${schema}"`);
        for (const m of MIGRATIONS.filter((m) => m.version <= 7)) {
          await db.query(m.sql);
          await db.query('INSERT INTO migrations (version, name, applied_at) VALUES ($1, $2, 1)', [m.version, m.name]);
        }
        await db.query(`INSERT INTO ${META_TABLE} (key, value) VALUES ('schema_version', '7')`);
        await db.query(`INSERT INTO clients (id, name, secret_hash, scope, org_id, audience, access_ttl_ms, refresh_ttl_ms, created_at, secret_updated_at)
          VALUES ('old-client', 'Old', NULL, 'read', 'org-1', 'https://api.example.test', NULL, 60000, 5, 6)`);
      });
      const store = await node(schema);
      expect(await store.schemaVersion()).toBe(LATEST_SCHEMA_VERSION);
      const old = {
        id: 'old-client', name: 'Old', secretHash: null, scope: 'read', orgId: 'org-1', audience: 'https://api.example.test',
        accessTtlMs: null, refreshTtlMs: 60000, createdAt: 5, secretUpdatedAt: 6, redirectUris: [], grantTypes: ['refresh_token'], loginProvider: false, requireDpop: false,
      };
      expect(await store.getClient('old-client')).toEqual(old);
      expect(await store.listClients()).toEqual([old]);
      expect((await store.findClientAndToken('old-client', null)).client).toEqual(old);
      const settings = { redirectUris: ['https://old.example.test/cb'], grantTypes: ['authorization_code', 'refresh_token'], loginProvider: true, requireDpop: false };
      expect(await store.updateClientSettings('old-client', settings, {})).toBe(true);
      expect((await store.findClientAndToken('old-client', null)).client).toEqual({ ...old, ...settings });
      const versions = await withPg(url, schema, async (db) => (await db.query<{ version: number }>('SELECT version FROM migrations ORDER BY version')).rows);
      expect(versions.map((r) => r.version)).toEqual(MIGRATIONS.map((m) => m.version));
    });

    it('a change and its audit line commit together: an audit insert that fails leaves the old key current, and no client made', async () => {
      const schema = freshSchema();
      const store = await node(schema);
      const key = (kid: string, createdAt: number) => ({ kid, alg: 'ES256', privateJwk: '{}', publicJwk: '{}', createdAt, retiredAt: null });
      const line = { at: T0 + HOUR, actor: 'serve:n1', action: 'signing_key.rotate', target: 'key:k2', count: 1, detail: 'ES256' };
      await store.addSigningKey(key('k1', T0), null, {});
      const refuse = (sql: string) => withPg(url, undefined, (db) => db.query(sql));
      await refuse(`CREATE FUNCTION "${schema}".refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'audit refused'; END $$`);
      await refuse(`CREATE TRIGGER audit_refuses BEFORE INSERT ON "${schema}".audit FOR EACH ROW EXECUTE FUNCTION "${schema}".refuse()`);
      await expect(store.addSigningKey(key('k2', T0 + HOUR), 'k1', { audit: line })).rejects.toThrow();
      expect((await store.listSigningKeys()).map((k) => [k.kid, k.retiredAt])).toEqual([['k1', null]]);
      // So does an operator's client: no client without its line.
      await expect(store.createClient(makeClient({ id: 'client-9' }), { audit: { ...line, action: 'client.create', target: 'client:client-9' } })).rejects.toThrow();
      expect(await store.getClient('client-9')).toBeNull();
      await refuse(`DROP TRIGGER audit_refuses ON "${schema}".audit`);
      expect(await store.addSigningKey(key('k2', T0 + HOUR), 'k1', { audit: line })).toBe(true);
      expect((await store.listSigningKeys()).map((k) => [k.kid, k.retiredAt])).toEqual([['k2', null], ['k1', T0 + HOUR]]);
      expect((await store.listAudit({})).map((a) => a.target)).toEqual(['key:k2']);
    });

    it('takes its schema from the URL’s ?schema= too, as --db and TOKENCTL_DB can only give a URL', async () => {
      const schema = freshSchema();
      const store = await PostgresStore.open(`${url}${url.includes('?') ? '&' : '?'}schema=${schema}`);
      cleanups.push(() => store.close());
      await store.createClient(makeClient({ id: 'client-1' }), {});
      expect(await tablesOf(schema)).toContain('clients');
      expect(store.location).toContain(`schema=${schema}`);
      await expect(PostgresStore.open(`${url}?schema=${schema}`, { schema: 'another' })).rejects.toThrow(/two schemas/);
    });

    it('names its location without the password', async () => {
      const withPassword = new URL(url);
      withPassword.password = 'hunter2';
      const store = await node(freshSchema(), withPassword.toString());
      expect(store.location).not.toContain('hunter2');
      expect(store.location).toContain(withPassword.host);
    });

    it('applies the migrations once when four nodes open a fresh schema at the same moment', async () => {
      const schema = freshSchema();
      const stores = await Promise.all([1, 2, 3, 4].map(() => node(schema)));
      await Promise.all(stores.map((s, i) => s.createClient(makeClient({ id: `c${i}` }), {})));
      for (const s of stores) {
        expect(await s.schemaVersion()).toBe(LATEST_SCHEMA_VERSION);
        expect((await s.listClients()).map((c) => c.id)).toEqual(['c0', 'c1', 'c2', 'c3']);
      }
      const recorded = await withPg(url, schema, async (db) => (await db.query('SELECT version FROM migrations ORDER BY 1')).rows);
      expect(recorded).toEqual(MIGRATIONS.map((m) => ({ version: m.version })));
      const meta = await withPg(url, schema, async (db) => (await db.query(`SELECT key, value FROM ${META_TABLE} ORDER BY key`)).rows);
      expect(meta).toEqual([
        { key: 'application', value: APPLICATION },
        { key: 'applied_version', value: String(LATEST_SCHEMA_VERSION) },
        { key: 'schema_version', value: String(NODES_FROM) },
      ]);
    });

    it('records which steps were expand, and keeps schema_version at the oldest version whose nodes run on the store', async () => {
      const schema = freshSchema();
      await (await node(schema)).close();
      const rows = await withPg(url, schema, async (db) => (await db.query("SELECT version FROM migrations WHERE change = 'expand' ORDER BY 1")).rows);
      expect(rows).toEqual(MIGRATIONS.filter((m) => m.change === 'expand').map((m) => ({ version: m.version })));
      // Migration 9 (which records the kinds) is expand; the SSF streams' step 10 is a contract step
      // (an older node would sign with either current key), so schema_version is 10.
      expect(MIGRATIONS.find((m) => m.version === 9)?.change).toBe('expand');
      expect(NODES_FROM).toBe(10);
    });

    it('runs on a store a newer release expanded, and applies nothing to it', async () => {
      const schema = freshSchema();
      await (await node(schema)).close();
      await withPg(url, schema, (db) =>
        db.query(`UPDATE ${META_TABLE} SET value = $1 WHERE key = 'applied_version'; CREATE TABLE newer_release_table (id int)`.replace('$1', `'${LATEST_SCHEMA_VERSION + 2}'`)),
      );
      const store = await node(schema);
      await store.createClient(makeClient({ id: 'after-expand' }), {});
      expect((await store.getClient('after-expand'))?.id).toBe('after-expand');
      expect(await store.schemaVersion()).toBe(LATEST_SCHEMA_VERSION + 2);
      await store.close();
    });

    it('refuses a schema written by a newer tokenctl with SchemaTooNewError', async () => {
      const schema = freshSchema();
      await (await node(schema)).close();
      // A contract step of a newer release: its nodes, and no older ones, run on the store.
      await withPg(url, schema, (db) =>
        db.query(`UPDATE ${META_TABLE} SET value = (CASE key WHEN 'schema_version' THEN $1 ELSE $2 END) WHERE key IN ('schema_version', 'applied_version')`, [
          String(LATEST_SCHEMA_VERSION + 1),
          String(LATEST_SCHEMA_VERSION + 2),
        ]),
      );
      const opening = PostgresStore.open(url, { schema });
      await expect(opening).rejects.toBeInstanceOf(SchemaTooNewError);
      await expect(opening).rejects.toMatchObject({ found: LATEST_SCHEMA_VERSION + 1, supported: LATEST_SCHEMA_VERSION, applied: LATEST_SCHEMA_VERSION + 2 });
      await expect(opening).rejects.toThrow(/needs a tokenctl that knows schema version \d+ or later.*Rolling upgrades/);
    });

    it('refuses tables named like its own that tokenctl did not create, and leaves them untouched', async () => {
      const schema = freshSchema();
      await withPg(url, undefined, async (db) => {
        await db.query(`CREATE SCHEMA "${schema}"`);
        await db.query(`CREATE TABLE "${schema}".tokens (body text); INSERT INTO "${schema}".tokens VALUES ('keep me')`);
      });
      const opening = PostgresStore.open(url, { schema });
      await expect(opening).rejects.toBeInstanceOf(NotAStoreError);
      await expect(opening).rejects.toThrow(/not a tokenctl store.*"tokens"/);
      expect(await tablesOf(schema)).toEqual(['tokens']);
      expect(await withPg(url, schema, async (db) => (await db.query('SELECT body FROM tokens')).rows)).toEqual([{ body: 'keep me' }]);
    });

    it('refuses a meta table of another application', async () => {
      const schema = freshSchema();
      await withPg(url, undefined, async (db) => {
        await db.query(`CREATE SCHEMA "${schema}"`);
        await db.query(`CREATE TABLE "${schema}".${META_TABLE} (key text PRIMARY KEY, value text NOT NULL)`);
        await db.query(`INSERT INTO "${schema}".${META_TABLE} VALUES ('application', 'something-else')`);
      });
      await expect(PostgresStore.open(url, { schema })).rejects.toBeInstanceOf(NotAStoreError);
    });

    it('rejects a schema name that would need quoting', async () => {
      await expect(PostgresStore.open(url, { schema: 'Bad"; DROP' })).rejects.toThrow(/invalid PostgreSQL schema name/);
    });

    describe('two nodes on one database', () => {
      const setup = async () => {
        const schema = freshSchema();
        const [a, b] = [await node(schema), await node(schema)];
        await a.createClient(makeClient({ id: 'client-1' }), {});
        return { a, b };
      };

      it('lets exactly one of twenty rotations racing on two nodes win', async () => {
        const { a, b } = await setup();
        const old = makeToken({ clientId: 'client-1', type: 'refresh_token' });
        await a.insertTokens([old]);
        const attempts = Array.from({ length: 20 }, () => {
          const next = makeGrant({ clientId: 'client-1', grantId: old.grantId });
          return { issued: [next.refresh, next.access] };
        });
        const outcomes = await Promise.all(attempts.map(({ issued }, i) => (i % 2 ? a : b).rotateRefreshToken(old.jti, issued, T0 + 1)));
        expect(outcomes.filter((o) => o === 'rotated')).toHaveLength(1);
        const winner = attempts[outcomes.indexOf('rotated')]!;
        expect((await b.findTokenByJti(old.jti))?.replacedBy).toBe(winner.issued[0]!.jti);
        const stored = await a.listTokens({ clientId: 'client-1' });
        expect(stored.map((t) => t.jti).sort()).toEqual([old.jti, ...winner.issued.map((t) => t.jti)].sort());
      });

      it('lets exactly one of concurrent revocations on two nodes revoke a token, cascading once', async () => {
        const { a, b } = await setup();
        const { refresh, access } = makeGrant({ clientId: 'client-1' });
        await a.insertTokens([refresh, access]);
        const results = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).revokeToken(refresh.jti, T0 + i, true, {})));
        expect(results.filter(Boolean)).toHaveLength(1);
        const at = T0 + results.indexOf(true);
        expect((await a.findTokenByJti(refresh.jti))?.revokedAt).toBe(at);
        expect((await b.findTokenByJti(access.jti))?.revokedAt).toBe(at);
      });
    });

    describe('when the database is unavailable', () => {
      it('fails fast with StoreUnavailableError when nothing listens, without leaking the password', async () => {
        const started = Date.now();
        const opening = PostgresStore.open('postgres://postgres:hunter2@127.0.0.1:1/test');
        await expect(opening).rejects.toBeInstanceOf(StoreUnavailableError);
        await expect(opening).rejects.toThrow(/127\.0\.0\.1:1.*connection refused/);
        await opening.catch((error: Error) => expect(error.message).not.toContain('hunter2'));
        expect(Date.now() - started).toBeLessThan(5_000);
      });

      it('gives up on a server that never answers after the connection timeout, instead of hanging', async () => {
        const silent = await startSilentServer();
        cleanups.push(() => silent.close());
        const started = Date.now();
        await expect(PostgresStore.open(`postgres://postgres@127.0.0.1:${silent.port}/test`)).rejects.toBeInstanceOf(StoreUnavailableError);
        expect(Date.now() - started).toBeLessThan(8_000); // the default connection timeout is 3 s
      });

      it('reports a connection ended by the server mid-transaction as StoreUnavailableError, then reconnects', async () => {
        const schema = freshSchema();
        const appName = testSchemaName(); // marks this store's connections in pg_stat_activity
        const store = await node(schema, `${url}${url.includes('?') ? '&' : '?'}application_name=${appName}`);
        await store.createClient(makeClient({ id: 'client-1' }), {});
        const old = makeToken({ clientId: 'client-1', type: 'refresh_token' });
        await store.insertTokens([old]);
        const next = () => {
          const g = makeGrant({ clientId: 'client-1', grantId: old.grantId });
          return [g.refresh, g.access];
        };
        await withPg(url, schema, async (db) => {
          // Hold the old token's row lock, so that the rotation waits inside its transaction.
          await db.query('BEGIN');
          await db.query('SELECT 1 FROM tokens WHERE jti = $1 FOR UPDATE', [old.jti]);
          const rotating = store.rotateRefreshToken(old.jti, next(), T0 + 1);
          rotating.catch(() => undefined); // asserted below
          const waiting = async () =>
            (await db.query("SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'", [appName])).rows;
          await vi.waitFor(async () => expect(await waiting()).toHaveLength(1), { timeout: 5_000 });
          await db.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [appName]);
          await expect(rotating).rejects.toBeInstanceOf(StoreUnavailableError);
          await db.query('ROLLBACK');
        });
        expect((await store.findTokenByJti(old.jti))?.replacedAt).toBeNull(); // the killed transaction wrote nothing
        expect(await store.rotateRefreshToken(old.jti, next(), T0 + 2)).toBe('rotated');
      });

      it('survives the database going away and coming back', async () => {
        const proxy = new TcpProxy(new URL(url).hostname, Number(new URL(url).port || 5432));
        await proxy.start();
        cleanups.push(() => proxy.stop());
        const store = await node(freshSchema(), proxy.rewrite(url));
        await store.createClient(makeClient({ id: 'client-1' }), {});
        const token = makeToken({ clientId: 'client-1' });
        await store.insertTokens([token]);
        await Promise.all(Array.from({ length: 5 }, () => store.ping())); // several idle connections
        expect(poolOf(store).idleCount).toBeGreaterThan(1);

        await proxy.stop(); // every connection cut, new ones refused
        // Idle connections learn it through 'error' events, which must not crash the process.
        await vi.waitFor(() => expect(poolOf(store).totalCount).toBe(0), { timeout: 5_000 });
        await expect(store.ping()).rejects.toBeInstanceOf(StoreUnavailableError);
        await expect(store.revokeToken(token.jti, T0, true, {})).rejects.toBeInstanceOf(StoreUnavailableError);
        await expect(store.findTokenByJti(token.jti)).rejects.toThrow(/unavailable/);

        await proxy.start();
        await expect(store.ping()).resolves.toBeUndefined();
        expect(await store.revokeToken(token.jti, T0, true, {})).toBe(true);
        expect((await store.findTokenByJti(token.jti))?.revokedAt).toBe(T0);
      });
    });

    it('revokes 100,000 tokens of one user in bulk, and only those, and a few without scanning them all', async () => {
      const schema = freshSchema();
      const store = await node(schema);
      await store.createClient(makeClient({ id: 'client-1' }), {});
      const prefix = `${randomUUID()}-`;
      expect(await insertGrantSeries(url, schema, { grants: 50_000, clientId: 'client-1', username: 'mass', issuedAt: T0, prefix })).toBe(100_000);
      await insertGrantSeries(url, schema, { grants: 500, clientId: 'client-1', username: 'other', issuedAt: T0, prefix: `other-${prefix}` });
      const expired: TokenRecord = makeToken({ clientId: 'client-1', username: 'mass', expiresAt: T0 - HOUR });
      await store.insertTokens([expired]);

      // Beside them, revoking a few tokens must not scan the table (even before ANALYZE has run).
      await insertGrantSeries(url, schema, { grants: 2, clientId: 'client-1', username: 'few', issuedAt: T0, prefix: `few-${prefix}` });
      const plans = await withPg(url, schema, async (db) => {
        const plan = async (sql: string, params: unknown[]) =>
          (await db.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`, params)).rows.map((r) => r['QUERY PLAN']).join('\n');
        const out: string[] = [];
        for (const selector of [{ username: 'few' }, { jti: `${prefix}refresh-1` }]) {
          const { sql, params, condition } = revocableQuery(selector, T0);
          out.push(await plan(`${sql} SELECT count(*) FROM tokens WHERE ${condition}`, params));
          out.push(await plan(`${sql} UPDATE tokens SET revoked_at = $1 WHERE ${condition}`, params));
        }
        return out;
      });
      for (const p of plans) expect(p).not.toMatch(/Seq Scan on tokens/);

      expect(await store.countRevocable({ username: 'mass' }, T0)).toBe(100_000);
      expect(await revokeAllBulk(store, { username: 'mass' }, T0)).toBe(100_000);
      expect(await store.countRevocable({ username: 'mass' }, T0)).toBe(0);
      expect(await revokeAllBulk(store, { username: 'mass' }, T0)).toBe(0);
      expect((await store.findTokenByJti(expired.jti))?.revokedAt).toBeNull();
      expect(await store.countRevocable({ username: 'other' }, T0)).toBe(1_000);
      const stats = await store.stats(T0);
      expect(stats.tokens.access_token.revoked + stats.tokens.refresh_token.revoked).toBe(100_000);
      expect(stats.tokens.access_token.active + stats.tokens.refresh_token.active).toBe(1_000 + 4); // 'other' and 'few'
    });
  });
});
