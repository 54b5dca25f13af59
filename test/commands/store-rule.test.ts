import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, createClient, issue, tempStore, tokenctl, type TempStore } from '../helpers/cli.js';
import { dropSchema, PG_SKIP_MESSAGE, PG_URL, testSchemaName, withPg } from '../helpers/pg.js';

/**
 * Contract 4: only serve, client create and migrate --to create a store. Every other
 * command refuses a store that does not exist, naming where it looked and the default store,
 * with exit code 6, and creates nothing.
 */
describe('the store rule', () => {
  let store: TempStore;
  let alice: string;
  beforeAll(async () => {
    store = tempStore();
    const client = await createClient(store);
    alice = (await issue(store, client.id, 'alice')).access_token;
  });
  afterAll(() => store.cleanup());

  it('a mistyped --db: revoke --user refuses, names the path and the default store, and creates nothing', async () => {
    const typo = join(store.dir, 'tokens.bd');
    const r = await tokenctl(['revoke', '--user', 'alice', '--db', typo, '--yes']);
    expect(r.code).toBe(6);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`no tokenctl store at ${typo}`);
    expect(r.stderr).toMatch(/the default store is \S*tokenctl\/tokens\.db/);
    expect(r.stderr).not.toMatch(/nothing to revoke/i);
    expect(existsSync(typo)).toBe(false);
    // alice's token is still active in the real store.
    expect((await store.json(['introspect', alice])).active).toBe(true);
  });

  it.each([
    ['status'],
    ['audit'],
    ['token', 'list'],
    ['client', 'list'],
    ['client', 'show', 'x'],
    ['introspect', '--jti', '0b6f0000-0000-4000-8000-000000000000'],
    ['purge', '--yes'],
    ['token', 'issue', '--client', 'x', '--user', 'u'],
  ])('%s … refuses a missing store (exit 6, JSON error) and creates no file', async (...args) => {
    const missing = join(store.dir, `missing-${args.join('-')}.db`);
    const r = await tokenctl([...args, '--db', missing, '--json']);
    expect(r.code).toBe(6);
    expect(r.stdout).toBe('');
    const { error } = JSON.parse(r.stderr) as { error: { code: string; message: string; hint: string } };
    expect(error.code).toBe('no_store');
    expect(error.message).toContain(missing);
    expect(error.hint).toMatch(/only serve, client create and migrate --to create a store/i);
    expect(existsSync(missing)).toBe(false);
  });

  it('migrate --to a store that is not there, without --from: refused (exit 6), the hint naming --from, nothing created', async () => {
    const missing = join(store.dir, 'missing-migrate-target.db');
    const r = await tokenctl(['migrate', '--to', missing, '--json']);
    expect(r.code).toBe(6);
    const { error } = JSON.parse(r.stderr) as { error: { code: string; message: string; hint: string } };
    expect(error).toMatchObject({ code: 'no_store', message: expect.stringContaining(missing) });
    expect(error.hint).toMatch(/without --from, migrate only brings an existing store's schema up to date.*add --from/);
    expect(existsSync(missing)).toBe(false);
  });

  it('the default store missing: says it is the default, and does not create the data directory', async () => {
    const home = mkdtempSync(join(tmpdir(), 'tokenctl-home-'));
    try {
      const r = await tokenctl(['status'], { env: { HOME: home, XDG_DATA_HOME: join(home, 'data') } });
      expect(r.code).toBe(6);
      expect(r.stderr).toContain(`no tokenctl store at ${join(home, 'data', 'tokenctl', 'tokens.db')}`);
      expect(r.stderr).toMatch(/this is the default store/);
      expect(existsSync(join(home, 'data', 'tokenctl'))).toBe(false);
      // client create is allowed to create it.
      const c = await tokenctl(['client', 'create', '--name', 'first', '--json'], { env: { HOME: home, XDG_DATA_HOME: join(home, 'data') } });
      expect(c.code).toBe(0);
      expect(existsSync(join(home, 'data', 'tokenctl', 'tokens.db'))).toBe(true);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('--db "" is refused (exit 2) and does not fall back to the default store, which keeps its tokens', async () => {
    const home = mkdtempSync(join(tmpdir(), 'tokenctl-home-'));
    const env = { HOME: home, XDG_DATA_HOME: join(home, 'data') };
    try {
      const c = await tokenctl(['client', 'create', '--name', 'default', '--json'], { env });
      await tokenctl(['token', 'issue', '--client', c.json<{ client_id: string }>().client_id, '--user', 'zed'], { env });
      const r = await tokenctl(['revoke', '--user', 'zed', '--db', '', '--yes'], { env });
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/^Error: --db is empty/);
      const left = await tokenctl(['token', 'list', '--user', 'zed', '--state', 'active', '--json'], { env });
      expect(left.json<{ total: number }>().total).toBe(2);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('an answer that depends on the store names it', async () => {
    const r = await store.run(['introspect', `tca_${'A'.repeat(43)}`]);
    expect(r.code).toBe(3);
    expect(r.stdout).toContain(`UNKNOWN no such token in ${store.db}`);
  });

  it('an empty file is not a store for a command that may not create one', async () => {
    const empty = join(store.dir, 'empty.db');
    writeFileSync(empty, '');
    const r = await tokenctl(['token', 'list', '--db', empty]);
    expect(r.code).toBe(6);
    expect(r.stderr).toContain('the file is empty');
  });

  it('a store that is there works as before', async () => {
    const fresh = tempStore({ create: false });
    try {
      expect((await fresh.run(['status'])).code).toBe(6);
      const c = await createClient(fresh);
      expect((await fresh.json(['client', 'show', c.id])).client_id).toBe(c.id);
    } finally {
      fresh.cleanup();
    }
  });
});

/**
 * A store the user may read but not write: a 0444 file in a directory they cannot write.
 * Reading commands open it read-only; writing commands say why they cannot. Permissions do not
 * bind root, so the commands run as user nobody (setpriv), when this runs as root.
 */
const canDropToNobody = process.getuid?.() === 0 && spawnSync('setpriv', ['--version']).status === 0;
describe.skipIf(!canDropToNobody)('a read-only store', () => {
  let dir: string;
  let db: string;
  let clientId: string;
  beforeAll(async () => {
    const s = tempStore();
    dir = s.dir;
    db = s.db;
    clientId = (await createClient(s)).id;
    await issue(s, clientId, 'alice');
    chmodSync(db, 0o444);
    chmodSync(dir, 0o555);
  });
  afterAll(() => {
    chmodSync(dir, 0o755);
    rmSync(dir, { recursive: true, force: true });
  });

  const asNobody = (args: string[]) => {
    const home = mkdtempSync(join(tmpdir(), 'tokenctl-nobody-'));
    chmodSync(home, 0o777);
    try {
      const r = spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, BIN, ...args, '--db', db], {
        env: { PATH: process.env.PATH, HOME: home, NO_COLOR: '1' },
        encoding: 'utf8',
        timeout: 20_000,
      });
      return { code: r.status, stdout: r.stdout, stderr: r.stderr };
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  };

  it('status, client list and token list read it', () => {
    const status = asNobody(['status', '--json']);
    expect(status.stderr).toBe('');
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout).clients).toBe(1);
    const tokens = asNobody(['token', 'list', '--json']);
    expect(tokens.code).toBe(0);
    expect(JSON.parse(tokens.stdout).tokens.map((t: { username: string }) => t.username)).toEqual(['alice', 'alice']);
    expect(asNobody(['client', 'list']).stdout).toContain(clientId);
  });

  it('a writing command says the store cannot be written by this user', () => {
    const r = asNobody(['token', 'issue', '--client', clientId, '--user', 'bob']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/cannot be written by this user/);
    expect(r.stderr).not.toMatch(/unexpected error/);
  });
});

describe.skipIf(!PG_URL)('the store rule on PostgreSQL', () => {
  if (!PG_URL) it.skip(PG_SKIP_MESSAGE, () => undefined);
  const schema = testSchemaName();
  afterAll(async () => {
    if (PG_URL) await dropSchema(PG_URL, schema);
  });

  it('a wrong ?schema= is refused and nothing is created; client create creates it', async () => {
    const url = `${PG_URL}${PG_URL!.includes('?') ? '&' : '?'}schema=${schema}`;
    const r = await tokenctl(['revoke', '--user', 'alice', '--yes', '--db', url]);
    expect(r.code).toBe(6);
    expect(r.stderr).toContain(`schema "${schema}" holds no tokenctl tables`);
    const exists = await withPg(PG_URL!, undefined, (db) => db.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]));
    expect(exists.rowCount).toBe(0);
    expect((await tokenctl(['client', 'create', '--name', 'x', '--db', url])).code).toBe(0);
    expect((await tokenctl(['status', '--db', url])).code).toBe(0);
  });

  it('a role that does not exist is reported as such, not as a pg_hba refusal', async () => {
    const url = new URL(PG_URL!);
    url.username = 'no_such_role_tokenctl';
    const r = await tokenctl(['status', '--db', url.href]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/role "no_such_role_tokenctl" does not exist/);
  });
});

describe.skipIf(!PG_URL)('the PostgreSQL password off the command line', () => {
  it('a password in --db is warned about; PGPASSWORD is read by the driver', async () => {
    const url = new URL(PG_URL!);
    url.password = 'not-needed-with-trust';
    const warned = await tokenctl(['status', '--db', `${url.href}${url.search ? '&' : '?'}schema=tokenctl_none`]);
    expect(warned.stderr).toMatch(/Warning: the password in --db is visible to other users \(ps\)/);
    expect(warned.stderr).not.toContain('not-needed-with-trust');
    const viaEnv = await tokenctl(['status', '--db', PG_URL!], { env: { PGPASSWORD: 'not-needed-with-trust' } });
    expect(viaEnv.stderr).not.toMatch(/Warning: the password/);
  });
});
