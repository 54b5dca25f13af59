import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LATEST_SCHEMA_VERSION, MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { ROOT, tokenctl } from '../helpers/cli.js';
import { PG_SKIP_MESSAGE, PG_URL, dropSchema, testSchemaName, withPg } from '../helpers/pg.js';

/**
 * Rolling upgrades (docs/scale-out.md): the release before the newest PostgreSQL migration, built
 * from git, serves refresh, revocation and introspection on a store that this build's
 * `tokenctl migrate` brought up to date, because every step since is "expand".
 */

/** The newest schema version a commit's PostgreSQL migrations name (0 for none). */
function latestAt(commit: string): number {
  let out = '';
  try {
    out = execFileSync('git', ['grep', '-h', '-E', '^\\s*version: [0-9]+,', commit, '--', 'src/store/postgres/'], { cwd: ROOT, encoding: 'utf8' });
  } catch {
    return 0; // no match
  }
  return Math.max(0, ...[...out.matchAll(/version: (\d+),/g)].map((m) => Number(m[1])));
}

/** The newest commit whose schema is older than this build's: the release before the latest migration. */
function previousRelease(): string | undefined {
  try {
    const commits = execFileSync('git', ['rev-list', '--max-count=400', 'HEAD', '--', 'src/store/postgres/'], { cwd: ROOT, encoding: 'utf8' }).split('\n').filter(Boolean);
    for (const c of commits) {
      const parent = `${c}^`;
      if (latestAt(c) >= LATEST_SCHEMA_VERSION && latestAt(parent) < LATEST_SCHEMA_VERSION) return execFileSync('git', ['rev-parse', parent], { cwd: ROOT, encoding: 'utf8' }).trim();
    }
  } catch {
    return undefined;
  }
  return undefined;
}

const previous = PG_URL ? previousRelease() : undefined;
const NO_HISTORY = 'rolling upgrade test skipped: no git history with an earlier PostgreSQL schema (a shallow clone or an export)';
if (!PG_URL) {
  console.warn(PG_SKIP_MESSAGE);
  it.skip(PG_SKIP_MESSAGE, () => undefined);
} else if (previous === undefined) {
  console.warn(NO_HISTORY);
  it.skip(NO_HISTORY, () => undefined);
}

/** The previous release, built once per commit into the temporary directory (kept for the next run). */
function buildRelease(commit: string): string {
  const dir = join(tmpdir(), `tokenctl-release-${commit.slice(0, 12)}`);
  if (existsSync(join(dir, 'dist/main/index.cjs')) && existsSync(join(dir, 'oclif.manifest.json'))) return dir;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  // git archive, not a worktree: nothing is left registered in the repository.
  execFileSync('sh', ['-c', `git archive ${commit} | tar -x -C "${dir}"`], { cwd: ROOT, timeout: 60_000 });
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  execFileSync('npm', ['run', 'build'], { cwd: dir, stdio: 'pipe', timeout: 480_000 });
  return dir;
}

/** `serve` of the release in `dir`, on a free port; resolves with its URL once it listens. */
function serveRelease(dir: string, db: string): Promise<{ url: string; child: ChildProcess; output: () => string }> {
  const home = mkdtempSync(join(tmpdir(), 'tokenctl-release-home-'));
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, XDG_DATA_HOME: join(home, 'data'), NO_COLOR: '1' };
  delete env.TOKENCTL_DB;
  const child = spawn(process.execPath, [join(dir, 'bin/run.js'), 'serve', '--db', db, '--host', '127.0.0.1', '--port', '0', '--node', 'old', '--log-level', 'warn'], { cwd: home, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the previous release did not start:\n${out}`));
    }, 30_000);
    const read = (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ url: m[1]!, child, output: () => out });
      }
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', read);
    child.on('exit', () => {
      clearTimeout(timer);
      rmSync(home, { recursive: true, force: true });
      reject(new Error(`the previous release exited:\n${out}`));
    });
  });
}

async function post(url: string, form: Record<string, string>, headers: Record<string, string> = {}): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: new URLSearchParams(form).toString(), signal: AbortSignal.timeout(15_000) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe.skipIf(!PG_URL || previous === undefined)('the previous release on a schema migrated by this build', () => {
  const schema = testSchemaName();
  const db = `${PG_URL}${PG_URL?.includes('?') ? '&' : '?'}schema=${schema}`;
  let old: { url: string; child: ChildProcess; output: () => string } | undefined;
  let release = '';
  /** A command of the previous release against the store, its --json output. */
  const oldCli = <T>(args: string[]): T =>
    JSON.parse(execFileSync(process.execPath, [join(release, 'bin/run.js'), ...args, '--db', db, '--json'], { encoding: 'utf8', stdio: 'pipe', timeout: 30_000, env: { ...process.env, NO_COLOR: '1' } })) as T;

  const cli = async <T>(args: string[]): Promise<T> => {
    const r = await tokenctl([...args, '--db', db, '--json'], { timeoutMs: 30_000 });
    expect(r.code, r.stderr).toBe(0);
    return r.json<T>();
  };

  beforeAll(async () => {
    const dir = (release = buildRelease(previous!));
    // A store of the release before (its nodes made it), then this build's migrate, as an
    // operator would run it before replacing any node.
    execFileSync(process.execPath, [join(dir, 'bin/run.js'), 'client', 'create', '--name', 'before', '--db', db, '--json'], { stdio: 'pipe', timeout: 30_000, env: { ...process.env, NO_COLOR: '1' } });
    expect(await cli<{ schema_version: number }>(['migrate'])).toMatchObject({ schema_version: LATEST_SCHEMA_VERSION });
    old = await serveRelease(dir, db);
  }, 600_000);

  afterAll(async () => {
    old?.child.kill('SIGKILL');
    if (PG_URL) await dropSchema(PG_URL, schema);
  }, 30_000);

  it('serves refresh, revocation and introspection, and leaves the schema as it found it', async () => {
    expect(latestAt(previous!)).toBeLessThan(LATEST_SCHEMA_VERSION);
    const client = await cli<{ client_id: string; client_secret: string }>(['client', 'create', '--name', 'rolling']);
    const issued = await cli<{ refresh_token: string; access_token: string }>(['token', 'issue', '--client', client.client_id, '--user', 'alice']);
    const creds = { client_id: client.client_id, client_secret: client.client_secret };
    const basic = 'Basic ' + Buffer.from(`${client.client_id}:${Buffer.from(client.client_secret).toString('base64')}`).toString('base64');

    const refreshed = await post(`${old!.url}/oauth/token`, { grant_type: 'refresh_token', refresh_token: issued.refresh_token }, { authorization: basic });
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
    const minted = refreshed.body.access_token as string;
    expect((await post(`${old!.url}/oauth/introspection`, { token: minted, ...creds })).body).toMatchObject({ active: true, username: 'alice' });
    const revoked = await post(`${old!.url}/oauth/revocation`, { token: issued.refresh_token, token_type_hint: 'refresh_token', ...creds });
    expect(revoked.body).toMatchObject({ code: 'token_revoke_success' });
    for (const token of [minted, issued.access_token, issued.refresh_token]) {
      expect((await post(`${old!.url}/oauth/introspection`, { token, ...creds })).body).toEqual({ active: false });
    }
    // This build reads what the old node wrote.
    const seen = await tokenctl(['introspect', minted, '--db', db, '--json'], { timeoutMs: 30_000 });
    expect(seen.json()).toEqual({ active: false });
    // A receiver the old node registers and changes (its columns only, the stream as JSON) is this build's too.
    oldCli(['receiver', 'add', 'rs-old', '--push', 'https://rs.example.test/events']);
    oldCli(['receiver', 'update', 'rs-old', '--alg', 'RS256', '--retention', '2d']);
    expect(await cli(['receiver', 'show', 'rs-old'])).toMatchObject({ id: 'rs-old', signing_alg: 'RS256', status: 'enabled', retention_ms: 2 * 86_400_000 });
    // The old node applied nothing, and the schema still says which nodes may run on it.
    const meta = await withPg(PG_URL!, schema, async (c) => (await c.query("SELECT key, value FROM tokenctl_meta WHERE key <> 'application' ORDER BY key")).rows);
    // schema_version: the newest contract step's nodesFrom, which the previous release knows.
    const nodesFrom = Math.max(...MIGRATIONS.map((m) => (m.change === 'expand' ? 0 : m.change.contract.nodesFrom)));
    expect(nodesFrom).toBeLessThanOrEqual(latestAt(previous!));
    expect(meta).toEqual([
      { key: 'applied_version', value: String(LATEST_SCHEMA_VERSION) },
      { key: 'schema_version', value: String(nodesFrom) },
    ]);
    expect(old!.child.exitCode).toBeNull();
  }, 60_000);
});
