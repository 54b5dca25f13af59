import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/engine/clock.js';
import { Engine } from '../../src/engine/engine.js';
import type { TokenResponse } from '../../src/engine/results.js';
import { MemoryStore } from '../../src/store/memory/index.js';
import { MIGRATE_ACTION, MigrateError, migrateStore, planMigration } from '../../src/migrate/migrate-store.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import type { AuditEntry, ClientRecord, TokenRecord, TokenStore } from '../../src/store/store.js';
import { hasScript, stripAnsi, tokenctl, tokenctlInTerminal } from '../helpers/cli.js';
import { PG_SKIP_MESSAGE, PG_URL, dropSchema, testSchemaName } from '../helpers/pg.js';
import { makeClient, makeToken } from '../helpers/records.js';
import { introspected, refreshAs, revokeAs } from '../helpers/engine.js';

/**
 * `tokenctl migrate`: a store copied into another through the TokenStore interface, every record
 * compared before and after, and tokens issued before the migration used against the new store.
 * SQLite → SQLite always; SQLite → PostgreSQL with TOKENCTL_TEST_PG.
 */

if (!PG_URL) {
  console.warn(PG_SKIP_MESSAGE);
  it.skip(PG_SKIP_MESSAGE, () => undefined);
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const ISSUER = 'https://issuer.example.test';
const ACTOR = 'cli:test';

/** `url` with `?schema=NAME` (or `&schema=NAME`) added. */
function withSchema(url: string, schema: string): string {
  return `${url}${url.includes('?') ? '&' : '?'}schema=${schema}`;
}

/** A place for stores of one kind, and how to clean it up. */
interface Target {
  kind: string;
  /** A location no store is at yet. */
  fresh(): string;
  cleanup(): Promise<void>;
}

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tokenctl-migrate-'));
  dirs.push(dir);
  return dir;
}
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function sqliteTarget(): Target {
  const dir = tempDir();
  let n = 0;
  return { kind: 'SQLite', fresh: () => join(dir, `target-${++n}.db`), cleanup: async () => undefined };
}

function postgresTarget(url: string): Target {
  const schemas: string[] = [];
  return {
    kind: 'PostgreSQL',
    fresh: () => {
      const schema = testSchemaName();
      schemas.push(schema);
      return withSchema(url, schema);
    },
    cleanup: async () => {
      await Promise.all(schemas.splice(0).map((s) => dropSchema(url, s)));
    },
  };
}

const pgUrl = PG_URL;
const TARGETS: (() => Target)[] = [sqliteTarget, ...(pgUrl ? [() => postgresTarget(pgUrl)] : [])];

async function open(location: string): Promise<TokenStore> {
  return location.startsWith('postgres') ? PostgresStore.open(location) : SqliteStore.open(location);
}

/** Everything a store holds, in its listing order; audit entries without their store-local ids. */
async function snapshot(store: TokenStore): Promise<{ clients: ClientRecord[]; tokens: TokenRecord[]; audit: Omit<AuditEntry, 'id'>[] }> {
  const [clients, tokens, audit] = await Promise.all([store.listClients(), store.listTokens({}), store.listAudit({})]);
  return { clients, tokens, audit: audit.map(({ id: _id, ...rest }) => rest) };
}

interface Seeded {
  now: number;
  secret: string;
  /** Active, never used. */
  alice: TokenResponse;
  /** Bob's first pair: its refresh token was rotated, so it is replaced. */
  bobOld: TokenResponse;
  /** What the rotation returned: current. */
  bob: TokenResponse;
  /** Refresh token revoked (and its access token with it). */
  carol: TokenResponse;
  /** Access token revoked, refresh token active. */
  dave: TokenResponse;
  /** Issued three days ago: both tokens expired. */
  old: TokenResponse;
}

/**
 * A source with every kind of record: a confidential client whose secret was rotated and a
 * public one, with their own lifetimes; active, expired, revoked and replaced tokens; tokens
 * issued in the same millisecond (listing ties); and the audit trail all of that left.
 */
async function seed(store: TokenStore): Promise<Seeded> {
  const now = Date.now();
  const clock = new ManualClock(now - 3 * DAY);
  const engine = new Engine({ store, clock, issuer: ISSUER, node: 'node-sqlite', rotateRefreshTokens: true });
  await engine.createClient({ id: 'web-shop', name: 'Web shop', scope: 'read write', orgId: 'org-web', audience: 'https://shop.example.test', accessTtlMs: 2 * HOUR }, ACTOR);
  await engine.createClient({ id: 'mobile-app', name: 'Mobile', public: true, scope: 'read', refreshTtlMs: 7 * DAY }, ACTOR);
  // The authorization code flow's settings travel with the client (a login provider, two redirect URIs).
  const settings = { redirectUris: ['https://shop.example.test/callback', 'http://127.0.0.1/cb'], grantTypes: ['authorization_code', 'refresh_token'], loginProvider: true, requireDpop: false };
  await store.updateClientSettings('web-shop', settings, {});
  const old = await engine.issue({ clientId: 'web-shop', username: 'old-user', refreshTtlMs: DAY });
  clock.set(now - HOUR);
  const { client_secret } = await engine.rotateClientSecret('web-shop', ACTOR);
  const web = (await store.getClient('web-shop'))!;
  clock.set(now - 30 * 60_000);
  const alice = await engine.issue({ clientId: 'web-shop', username: 'alice', sub: 'alice-sub', scope: 'read' });
  const bobOld = await engine.issue({ clientId: 'web-shop', username: 'bob' });
  const carol = await engine.issue({ clientId: 'mobile-app', username: 'carol' });
  const dave = await engine.issue({ clientId: 'web-shop', username: 'dave' });
  for (let i = 0; i < 12; i++) await engine.issue({ clientId: 'mobile-app', username: `user-${i}` }); // same instant
  clock.advance(60_000);
  const bob = await refreshAs(engine, { client: web, secret: client_secret!, refreshToken: bobOld.refresh_token });
  await engine.revokeAsOperator(carol.refresh_token, ACTOR);
  await engine.revokeAsOperator(dave.access_token, ACTOR);
  clock.set(now);
  return { now, secret: client_secret!, alice, bobOld, bob, carol, dave, old };
}

describe.each(TARGETS)('migrating a SQLite store (%#)', (makeTarget) => {
  const target = makeTarget();
  let source: SqliteStore;
  let seeded: Seeded;
  const opened: TokenStore[] = [];
  const openTarget = async (location = target.fresh()) => {
    const store = await open(location);
    opened.push(store);
    return store;
  };

  beforeEach(async () => {
    source = await SqliteStore.open(join(tempDir(), 'source.db'));
    opened.push(source);
    seeded = await seed(source);
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((s) => s.close()));
    await target.cleanup();
  });

  it(`into ${target.kind}: every client, token and audit entry arrives with every field`, async () => {
    const into = await openTarget();
    const before = await snapshot(source);
    expect(before.tokens.map((t) => t.type === 'refresh_token' && t.replacedAt !== null)).toContain(true);
    expect(before.tokens.some((t) => t.revokedAt !== null)).toBe(true);
    expect(before.tokens.some((t) => t.expiresAt <= seeded.now)).toBe(true);
    expect(before.clients.some((c) => c.secretHash === null)).toBe(true);
    expect(before.clients.find((c) => c.id === 'web-shop')).toMatchObject({ redirectUris: ['https://shop.example.test/callback', 'http://127.0.0.1/cb'], loginProvider: true, requireDpop: false });

    const plan = await planMigration(source, into, { now: seeded.now });
    expect(plan.source.clients).toBe(2);
    expect(plan.source.tokenTotal).toBe(before.tokens.length);
    expect(plan.target).toMatchObject({ clients: 0, tokenTotal: 0, audit: 0 });

    const report = await migrateStore(source, into, { actor: ACTOR, now: plan.now, batchSize: 7 });
    expect(report.clients).toEqual({ source: 2, copied: 2, present: 0, differing: 0 });
    expect(report.tokens).toEqual({ source: before.tokens.length, copied: before.tokens.length, present: 0, differing: 0 });
    expect(report.audit).toEqual({ source: before.audit.length, copied: before.audit.length, present: 0, differing: 0 });
    expect(report.verified).toBe(2 + before.tokens.length);
    expect(report.differences).toEqual([]);

    const after = await snapshot(into);
    expect(after.clients).toEqual(before.clients);
    expect(after.tokens).toEqual(before.tokens);
    // The same trail in the same order, below one line recording the migration.
    expect(after.audit.slice(1)).toEqual(before.audit);
    expect(after.audit[0]).toMatchObject({ actor: ACTOR, action: MIGRATE_ACTION, target: 'store', count: 2 + before.tokens.length });
    expect(after.audit[0]!.detail).toContain(`from ${source.location}:`);
    // The source is read only.
    expect(await snapshot(source)).toEqual(before);
    expect(await source.listAudit({})).toHaveLength(before.audit.length);
  });

  it(`into ${target.kind}: tokens issued before the migration introspect, refresh and revoke as before`, async () => {
    const into = await openTarget();
    await migrateStore(source, into, { actor: ACTOR });
    const clock = new ManualClock(seeded.now);
    const settings = { issuer: ISSUER, node: 'node-new', rotateRefreshTokens: true, clock };
    const was = new Engine({ store: source, ...settings });
    const is = new Engine({ store: into, ...settings });

    // Every token introspects exactly as it did: active ones with all twelve fields.
    const s = seeded;
    for (const token of [s.alice, s.bobOld, s.bob, s.carol, s.dave, s.old].flatMap((r) => [r.access_token, r.refresh_token])) {
      expect(await introspected(is, token)).toEqual(await introspected(was, token));
    }
    expect(await introspected(is, s.alice.access_token)).toMatchObject({ active: true, client_id: 'web-shop', username: 'alice', sub: 'alice-sub', scope: 'read', jti: s.alice.jti });
    expect(await introspected(is, s.carol.access_token)).toEqual({ active: false });
    expect(await introspected(is, s.dave.refresh_token)).toMatchObject({ active: true });

    // The rotated secret's hash came along: the client authenticates with the current password only.
    const web = await is.authenticate({ clientId: 'web-shop', secrets: [s.secret] });
    await expect(is.authenticate({ clientId: 'web-shop', secrets: ['not-the-secret-at-all'] })).rejects.toThrow();
    const mobile = await is.authenticate({ clientId: 'mobile-app', secrets: [] });

    // Refresh works, with the client's own lifetime (2 h), and the new token is served by the new store.
    const refreshed = await refreshAs(is, { client: web, secret: s.secret, refreshToken: s.alice.refresh_token });
    expect(refreshed).toMatchObject({ node: 'node-new', expires_in: 7200, scope: 'read' });
    expect(await introspected(is, refreshed.access_token)).toMatchObject({ active: true, username: 'alice' });
    // Replaced, revoked and expired refresh tokens stay so: the replaced one is reuse, and ends bob's grant.
    await expect(refreshAs(is, { client: web, secret: s.secret, refreshToken: s.bobOld.refresh_token })).rejects.toMatchObject({ reason: 'revoked' });
    expect(await introspected(is, s.bob.access_token)).toEqual({ active: false });
    await expect(refreshAs(is, { client: mobile, refreshToken: s.carol.refresh_token })).rejects.toMatchObject({ reason: 'revoked' });
    await expect(refreshAs(is, { client: web, secret: s.secret, refreshToken: s.old.refresh_token })).rejects.toMatchObject({ reason: 'expired' });
    // Revoking a pre-migration token: the first revocation wins, the second finds it revoked.
    expect(await revokeAs(is, { client: web, secret: s.secret, token: s.dave.refresh_token })).toMatchObject({ result: { code: 'token_revoke_success' } });
    expect(await revokeAs(is, { client: web, secret: s.secret, token: s.dave.refresh_token })).toMatchObject({ result: { code: 'token_already_revoked' } });
  });

  it(`into ${target.kind}: a second run is refused, and with merge copies nothing`, async () => {
    const location = target.fresh();
    const into = await openTarget(location);
    await migrateStore(source, into, { actor: ACTOR });
    const once = await snapshot(into);

    const refused = planMigration(source, into);
    await expect(refused).rejects.toBeInstanceOf(MigrateError);
    await expect(refused).rejects.toMatchObject({ code: 'target_not_empty', message: expect.stringMatching(/already migrated from .*source\.db/) });
    expect(await snapshot(into)).toEqual(once);

    await planMigration(source, into, { merge: true });
    const again = await migrateStore(source, into, { actor: ACTOR, merge: true });
    expect(again.clients).toMatchObject({ copied: 0, present: 2, differing: 0 });
    expect(again.tokens).toMatchObject({ copied: 0, present: once.tokens.length, differing: 0 });
    expect(again.audit).toMatchObject({ copied: 0, present: once.audit.length - 1 });
    const twice = await snapshot(into);
    expect(twice.clients).toEqual(once.clients);
    expect(twice.tokens).toEqual(once.tokens);
    expect(twice.audit.slice(1)).toEqual(once.audit); // one more migration line, nothing else
  });

  it(`into ${target.kind}: merge completes an interrupted migration and keeps what the target changed`, async () => {
    const into = await openTarget();
    const all = await snapshot(source);
    // What an interruption leaves: the clients, part of the tokens, none of the audit trail.
    for (const c of all.clients) await into.createClient(c, {});
    const copiedBefore = all.tokens.filter((t) => t.clientId === 'web-shop');
    await into.insertTokens(copiedBefore);
    // ...and a server on the target revoked one of them since.
    const changed = copiedBefore.find((t) => t.revokedAt === null && t.replacedAt === null && t.expiresAt > seeded.now)!;
    await into.revokeToken(changed.jti, seeded.now + 1, false, {});

    await expect(planMigration(source, into)).rejects.toMatchObject({ code: 'target_not_empty' });
    const report = await migrateStore(source, into, { actor: ACTOR, merge: true, batchSize: 5 });
    expect(report.clients).toEqual({ source: 2, copied: 0, present: 2, differing: 0 });
    expect(report.tokens).toEqual({ source: all.tokens.length, copied: all.tokens.length - copiedBefore.length, present: copiedBefore.length, differing: 1 });
    expect(report.audit).toMatchObject({ copied: all.audit.length, present: 0 });
    expect(report.differences).toEqual([`token ${changed.jti}: revokedAt`]);

    const after = await snapshot(into);
    expect(after.tokens).toEqual(all.tokens.map((t) => (t.jti === changed.jti ? { ...t, revokedAt: seeded.now + 1 } : t)));
    expect(after.audit.slice(1)).toEqual(all.audit);
  });

  it(`into ${target.kind}: refuses an empty source, and the same store twice`, async () => {
    const into = await openTarget();
    const empty = await SqliteStore.open(join(tempDir(), 'empty.db'));
    opened.push(empty);
    await expect(planMigration(empty, into)).rejects.toMatchObject({ code: 'source_empty' });
    await expect(planMigration(source, source)).rejects.toMatchObject({ code: 'same_store' });
  });
});

describe('migration safeguards (in-memory stores)', () => {
  /** A copy of `store` whose methods can be wrapped. */
  function wrap(store: TokenStore, overrides: Partial<TokenStore>): TokenStore {
    return new Proxy(store, {
      get: (t, key, receiver) => (key in overrides ? overrides[key as keyof TokenStore] : (Reflect.get(t, key, receiver) as unknown)),
    });
  }

  async function memorySource(): Promise<MemoryStore> {
    const store = new MemoryStore();
    const client = makeClient({ id: 'c1' });
    await store.createClient(client, {});
    await store.insertTokens(Array.from({ length: 10 }, (_, i) => makeToken({ clientId: 'c1', issuedAt: 1_700_000_000_000 + i })));
    await store.appendAudit({ at: 1, actor: ACTOR, action: 'client.create', target: 'client:c1', count: 1, detail: '' });
    return store;
  }

  it('reports a source that a server still writes to while it is copied', async () => {
    const source = await memorySource();
    let written = false;
    const busy = wrap(source, {
      scanTokens: async (after, limit) => {
        const rows = await source.scanTokens(after, limit);
        if (!written) {
          written = true;
          await source.insertTokens([makeToken({ clientId: 'c1' })]); // a refresh on a node still running
        }
        return rows;
      },
    });
    await expect(migrateStore(busy, new MemoryStore(), { actor: ACTOR })).rejects.toMatchObject({ code: 'source_changed' });
  });

  it('reports a revocation on the source while it is copied', async () => {
    const source = await memorySource();
    const [first] = await source.listTokens({ limit: 1 });
    let done = false;
    const busy = wrap(source, {
      scanTokens: async (after, limit) => {
        const rows = await source.scanTokens(after, limit);
        if (!done) {
          done = true;
          await source.revokeToken(first!.jti, Date.now(), false, {});
        }
        return rows;
      },
    });
    await expect(migrateStore(busy, new MemoryStore(), { actor: ACTOR })).rejects.toMatchObject({ code: 'source_changed' });
  });

  it('fails verification when the target does not keep a field (no silent loss)', async () => {
    const source = await memorySource();
    const [first] = await source.listTokens({ limit: 1 });
    await source.rotateRefreshToken(first!.jti, [], 1_700_000_100_000);
    const target = new MemoryStore();
    const lossy = wrap(target, {
      insertTokens: (tokens) => target.insertTokens(tokens.map((t) => ({ ...t, replacedBy: null, replacedAt: null }))),
    });
    const failed = migrateStore(source, lossy, { actor: ACTOR });
    await expect(failed).rejects.toMatchObject({ code: 'verification_failed', message: expect.stringContaining(`token ${first!.jti} differs in replacedAt`) });
    expect(await target.listAudit({})).toEqual([]); // no migration line for a failed migration
  });

  it('fails verification when the target does not keep a client’s redirect URIs or grant types', async () => {
    const source = await memorySource();
    await source.updateClientSettings('c1', { redirectUris: ['https://c1.example.test/cb'], grantTypes: ['authorization_code'], loginProvider: false, requireDpop: false }, {});
    const target = new MemoryStore();
    const lossy = wrap(target, { createClient: (client, trail) => target.createClient({ ...client, redirectUris: [], grantTypes: [...client.grantTypes, 'x'] }, trail) });
    const failed = migrateStore(source, lossy, { actor: ACTOR });
    await expect(failed).rejects.toMatchObject({ code: 'verification_failed', message: expect.stringContaining('client c1 differs in redirectUris, grantTypes') });
  });

  it('reads the source a page at a time and never lists a whole client', async () => {
    const source = await memorySource();
    const pages: number[] = [];
    const paged = wrap(source, {
      scanTokens: async (after, limit) => {
        const rows = await source.scanTokens(after, limit);
        pages.push(rows.length);
        return rows;
      },
      listTokens: () => Promise.reject(new Error('listTokens reads a whole slice into memory')),
    });
    const target = new MemoryStore();
    const report = await migrateStore(paged, target, { actor: ACTOR, batchSize: 4 });
    expect(pages).toEqual([4, 4, 2, 0]);
    expect(report.tokens).toMatchObject({ source: 10, copied: 10 });
    expect(report.verified).toBe(11); // 10 tokens and the client
    expect((await target.listTokens({})).map((t) => t.jti).sort()).toEqual((await source.listTokens({})).map((t) => t.jti).sort());
  });

  it('reports progress in batches', async () => {
    const source = await memorySource();
    const seen: [number, number][] = [];
    await migrateStore(source, new MemoryStore(), { actor: ACTOR, batchSize: 3, onProgress: (done, total) => seen.push([done, total]) });
    expect(seen.at(-1)).toEqual([10, 10]);
    expect(seen.every(([done], i) => i === 0 || done >= seen[i - 1]![0])).toBe(true);
    expect(seen.length).toBeGreaterThan(3);
  });
});

describe.each(TARGETS)('tokenctl migrate, the command (%#)', (makeTarget) => {
  const target = makeTarget();
  let dir: string;
  let from: string;
  let to: string;
  let client: { client_id: string; client_secret: string };
  let issued: TokenResponse;

  beforeEach(async () => {
    dir = tempDir();
    from = join(dir, 'tokens.db');
    to = target.fresh();
    const json = async <T>(args: string[]): Promise<T> => {
      const r = await tokenctl([...args, '--db', from, '--json']);
      expect(r.code, r.stderr).toBe(0);
      return r.json<T>();
    };
    client = await json(['client', 'create', '--name', 'shop', '--scope', 'read write']);
    issued = await json(['token', 'issue', '--client', client.client_id, '--user', 'alice']);
  });
  afterEach(() => target.cleanup());

  it(`into ${target.kind}: asks first, summarises, and the old tokens work against the new store`, async () => {
    // Without a terminal and without --yes: nothing is copied.
    const unconfirmed = await tokenctl(['migrate', '--from', from, '--to', to, '--json']);
    expect(unconfirmed.code, unconfirmed.stderr).toBe(5);
    expect(JSON.parse(unconfirmed.stderr).error.code).toBe('not_confirmed');

    const dry = await tokenctl(['migrate', '--from', from, '--to', to, '--dry-run', '--json']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.json()).toMatchObject({ dry_run: true, source: { clients: 1, tokens: { total: 2, active: 2 } }, target_before: { clients: 0 }, tokens: { copied: 0 } });

    const done = await tokenctl(['migrate', '--from', from, '--to', to, '--yes', '--json']);
    expect(done.code, done.stderr).toBe(0);
    expect(done.json()).toMatchObject({
      dry_run: false,
      merge: false,
      source: { clients: 1, tokens: { total: 2, active: 2, expired: 0, revoked: 0 }, audit: 1 },
      target_before: { clients: 0, tokens: { total: 0 }, audit: 0 },
      clients: { source: 1, copied: 1, already_present: 0 },
      tokens: { source: 2, copied: 2, already_present: 0 },
      audit: { source: 1, copied: 1 },
      verified: 3,
    });

    const introspected = await tokenctl(['introspect', issued.access_token, '--db', to, '--json']);
    expect(introspected.code, introspected.stderr).toBe(0);
    expect(introspected.json()).toMatchObject({ active: true, client_id: client.client_id, username: 'alice', jti: issued.jti });
    const refreshed = await tokenctl(['refresh', issued.refresh_token, '--db', to, '--client-id', client.client_id, '--client-secret', client.client_secret, '--json']);
    expect(refreshed.code, refreshed.stderr).toBe(0);
    expect(refreshed.json()).toMatchObject({ refresh_token: issued.refresh_token, token_type: 'bearer' });

    // Run again: refused, nothing changed; with --merge: nothing to copy.
    const again = await tokenctl(['migrate', '--from', from, '--to', to, '--yes', '--json']);
    expect(again.code).toBe(1);
    expect(JSON.parse(again.stderr).error).toMatchObject({ code: 'target_not_empty', hint: expect.stringContaining('--merge') });
    const merged = await tokenctl(['migrate', '--from', from, '--to', to, '--yes', '--merge']);
    expect(merged.code, merged.stderr).toBe(0);
    expect(merged.stdout).toMatch(/Nothing to copy/);
  });

  it(`into ${target.kind}: a human summary, and clear refusals`, async () => {
    const done = await tokenctl(['migrate', '--from', from, '--to', to, '--yes']);
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toMatch(/Migrated .*tokens\.db into /);
    expect(done.stdout).toMatch(/Tokens:\s+2 copied/);
    expect(done.stdout).toMatch(/Verified:\s+3 records/);

    const missing = await tokenctl(['migrate', '--from', join(dir, 'nope.db'), '--to', to, '--yes']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/no store to copy from at .*nope\.db/);
    expect(existsSync(join(dir, 'nope.db'))).toBe(false);

    const noTarget = await tokenctl(['migrate', '--from', from, '--yes']);
    expect(noTarget.code).toBe(2);
    expect(noTarget.stderr).toMatch(/--to/);

    const same = await tokenctl(['migrate', '--from', from, '--to', from, '--yes']);
    expect(same.code).toBe(2);
    expect(same.stderr).toMatch(/same store/);
  });
});

describe.skipIf(!hasScript())('tokenctl migrate at a terminal', () => {
  it('asks, copies nothing on "no", and copies on "yes"', async () => {
    const dir = tempDir();
    const from = join(dir, 'tokens.db');
    const to = join(dir, 'target.db');
    const created = await tokenctl(['client', 'create', '--name', 'shop', '--db', from, '--json']);
    expect(created.code, created.stderr).toBe(0);
    const question = /Copy 1 client, 0 tokens[\s\S]*target\.db\?[\s\S]*\(y\/N\)/; // wrapped at the terminal's width

    const no = await tokenctlInTerminal(['migrate', '--from', from, '--to', to], { answers: [{ when: question, send: 'n\r' }] });
    expect(no.code).toBe(5);
    expect(stripAnsi(no.output)).toMatch(/Nothing copied/);
    const stillEmpty = await tokenctl(['migrate', '--from', from, '--to', to, '--dry-run', '--json']);
    expect(stillEmpty.json()).toMatchObject({ target_before: { clients: 0, audit: 0 } });

    const yes = await tokenctlInTerminal(['migrate', '--from', from, '--to', to], { answers: [{ when: question, send: 'y\r' }] });
    expect(yes.code, yes.output).toBe(0);
    expect(stripAnsi(yes.output)).toMatch(/Migrated .*tokens\.db into .*target\.db/);
  });
});
