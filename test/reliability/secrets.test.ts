import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSpecAuthorization } from '../../src/engine/client-auth.js';
import { Engine } from '../../src/engine/engine.js';
import type { TokenResponse } from '../../src/engine/results.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { BIN, tokenctl, type CliResult } from '../helpers/cli.js';
import { killAllChildren, post, startServe, SystemTimeClock, tempDir, type ServeProcess } from '../helpers/load.js';

/**
 * Secrets stay secret (the issue's "Secrets"): after a server and the CLI have used every token
 * and password below (successfully and not), none of them appears in
 * - the store: the SQLite file, its WAL and its shared-memory file, while the server runs and
 *   after it stopped;
 * - the server's output at the most verbose log level (trace), whatever requests it got: tokens
 *   in query strings and paths, wrong passwords, Bearer headers, an expired refresh token (whose
 *   token spec 7.1 echoes to the client, never to the log);
 * - the output (stdout and stderr, human and --json) of every CLI command that does not exist to
 *   print one: only `client create`, `client rotate-secret`, `token issue` and `refresh` do.
 * And the store's files are private (0600) even under umask 000, and the data directory 0700.
 *
 * A needle is searched as given, as its random part without the `tca_`/`tcr_`/`tcs_` prefix, and
 * for passwords also in the Base64 forms the Basic headers carry.
 */

const tmp = tempDir('tokenctl-secrets-');
const db = join(tmp.dir, 'tokens.db');
let server: ServeProcess;
const needles = new Set<string>();
const cliOutputs: { args: string[]; r: CliResult }[] = [];

function remember(...values: (string | null | undefined)[]): void {
  for (const v of values) {
    if (!v) continue;
    needles.add(v);
    const random = /^tc[ars]_(.+)$/.exec(v)?.[1];
    if (random) needles.add(random);
  }
}

function rememberPassword(id: string, password: string): void {
  remember(password, Buffer.from(password).toString('base64'), buildSpecAuthorization(id, password).slice('Basic '.length));
  remember(Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(password)}`).toString('base64'));
}

/** The needles found in `haystack`, shortened for the failure message. */
function leaks(haystack: string | Buffer): string[] {
  const text = typeof haystack === 'string' ? haystack : haystack.toString('latin1');
  return [...needles].filter((n) => text.includes(n)).map((n) => n.slice(0, 12) + '…');
}

/** A CLI command that prints no secret by design; its output is kept for the scan. */
async function quiet(args: string[], options: { expectCode?: number } = {}): Promise<CliResult> {
  const r = await tokenctl([...args, '--db', db], { timeoutMs: 20_000 });
  if (options.expectCode !== undefined) expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(options.expectCode);
  cliOutputs.push({ args, r });
  return r;
}

type Issued = TokenResponse;

describe('no token or secret leaks', { timeout: 60_000 }, () => {
  let conf: { client_id: string; client_secret: string };
  let other: { client_id: string; client_secret: string };
  let pub: { client_id: string; client_secret: string };
  let grants: Issued[];
  let expiring: Issued;

  beforeAll(async () => {
    // Under umask 000 the server creates the store: its files must still be private.
    server = await startServe(['--db', db, '--log-level', 'trace'], { umask: '000' });
    // Clients and tokens come from a second process on the same file (an engine in this one):
    // what `client create` and `token issue` print is the secret, by design.
    const store = await SqliteStore.open(db);
    try {
      const engine = new Engine({ store, clock: new SystemTimeClock() });
      const made = async (input: Parameters<Engine['createClient']>[0]) => {
        const r = await engine.createClient(input, 'cli:test');
        return { client_id: r.client.client_id, client_secret: r.client_secret! };
      };
      conf = await made({ name: 'conf' });
      other = await made({ name: 'other', secret: 'operator-chosen-password-42' });
      pub = await made({ name: 'pub', public: true });
      grants = await Promise.all([0, 1, 2, 3, 4].map((i) => engine.issue({ clientId: conf.client_id, username: `user-${i}` })));
      expiring = await engine.issue({ clientId: conf.client_id, username: 'late', refreshTtlMs: 1000, accessTtlMs: 1000 });
    } finally {
      await store.close();
    }
    rememberPassword(conf.client_id, conf.client_secret);
    rememberPassword(other.client_id, other.client_secret);
    for (const g of [...grants, expiring]) remember(g.access_token, g.refresh_token);
  }, 60_000);

  afterAll(async () => {
    await server?.kill('SIGTERM');
    await killAllChildren();
    tmp.cleanup();
  });

  it('the server logs none, whatever it was sent; the store files hold none and are private', async () => {
    const url = server.url;
    const creds = { client_id: conf.client_id, client_secret: conf.client_secret };
    const [g0, g1, g2] = grants as [Issued, Issued, Issued];
    const wrong = ['wrong-password-for-conf-1', 'another-wrong-password-2'];
    for (const w of wrong) rememberPassword(conf.client_id, w);
    rememberPassword('no-such-client', 'unknown-client-password-3');

    // Successes on every endpoint, with every form of client authentication.
    expect((await post(`${url}/oauth/introspection`, { token: g0.access_token, token_type_hint: 'access_token', ...creds })).body).toMatchObject({ active: true });
    const spec = await post(`${url}/oauth/token`, { grant_type: 'refresh_token', refresh_token: g0.refresh_token }, { authorization: buildSpecAuthorization(conf.client_id, conf.client_secret) });
    expect(spec.status).toBe(200);
    const rfc = await post(
      `${url}/oauth/token`,
      { grant_type: 'refresh_token', refresh_token: g1.refresh_token },
      { authorization: 'Basic ' + Buffer.from(`${conf.client_id}:${encodeURIComponent(conf.client_secret)}`).toString('base64') },
    );
    expect(rfc.status).toBe(200);
    remember(spec.body!.access_token as string, rfc.body!.access_token as string);
    expect((await post(`${url}/oauth/revocation`, { token: g2.access_token, token_type_hint: 'access_token', ...creds })).body).toMatchObject({ code: 'token_revoke_success' });
    expect((await post(`${url}/oauth/introspection`, { token: g1.access_token, token_type_hint: 'access_token', client_id: pub.client_id })).status).toBe(200);

    // Failures: wrong and unknown passwords, a public client with one, tokens where they do not belong.
    for (const w of wrong) {
      expect((await post(`${url}/oauth/introspection`, { token: g0.access_token, token_type_hint: 'access_token', client_id: conf.client_id, client_secret: w })).status).toBe(401);
      expect((await post(`${url}/oauth/token`, { grant_type: 'refresh_token', refresh_token: g0.refresh_token }, { authorization: buildSpecAuthorization(conf.client_id, w) })).status).toBe(401);
    }
    expect((await post(`${url}/oauth/revocation`, { token: g0.access_token, token_type_hint: 'access_token', client_id: 'no-such-client', client_secret: 'unknown-client-password-3' })).status).toBe(401);
    expect((await post(`${url}/oauth/introspection`, { token: g0.access_token, token_type_hint: 'access_token', client_id: pub.client_id, client_secret: conf.client_secret })).status).toBe(401);
    expect((await post(`${url}/oauth/introspection`, { token: g0.access_token, token_type_hint: 'bogus', ...creds })).status).toBe(400);
    expect((await post(`${url}/oauth/introspection?token=${g0.access_token}&client_secret=${conf.client_secret}`, { token_type_hint: 'access_token' })).status).toBe(400);
    expect((await fetch(`${url}/oauth/revocation/${g0.refresh_token}?client_secret=${conf.client_secret}`)).status).toBe(404);
    expect((await fetch(`${url}/oauth/introspection`, { headers: { authorization: `Bearer ${g0.access_token}` } })).status).toBe(405);
    const bearer = await post(`${url}/oauth/introspection`, { token: g0.access_token, token_type_hint: 'access_token' }, { authorization: `Bearer ${g0.access_token}` });
    expect(bearer.status).toBe(401);
    expect((await fetch(`${url}/oauth/introspection`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: g0.access_token, ...creds }) })).status).toBe(415);

    // Spec 7.1: an expired refresh token is echoed to the client that sent it, and only there.
    const deadline = Date.now() + 15_000;
    while ((await post(`${url}/oauth/introspection`, { token: expiring.refresh_token, token_type_hint: 'refresh_token', ...creds })).body?.active !== false) {
      if (Date.now() > deadline) throw new Error('the 1 s refresh token did not expire within 15 s');
      await new Promise((r) => setTimeout(r, 50));
    }
    const expired = await post(`${url}/oauth/token`, { grant_type: 'refresh_token', refresh_token: expiring.refresh_token }, { authorization: buildSpecAuthorization(conf.client_id, conf.client_secret) });
    expect(expired.status).toBe(401);
    expect(expired.body!.error_description).toContain(expiring.refresh_token);

    // The CLI as a remote client of this server (--url): it prints the answers, never the password.
    // --hint: this branch's server still requires token_type_hint (the CLI sends it only when given).
    const remote = ['--url', url, '--client-id', conf.client_id, '--hint', 'access_token'];
    await quiet(['introspect', g0.access_token, ...remote, '--client-secret', conf.client_secret], { expectCode: 0 });
    await quiet(['introspect', g0.access_token, ...remote, '--client-secret', conf.client_secret, '--json'], { expectCode: 0 });
    await quiet(['revoke', g1.access_token, ...remote, '--client-secret', conf.client_secret], { expectCode: 0 });
    expect((await quiet(['introspect', g0.access_token, ...remote, '--client-secret', 'wrong-remote-password-5'])).code).not.toBe(0);
    expect((await quiet(['revoke', g0.access_token, ...remote, '--client-secret', 'wrong-remote-password-5', '--json'])).code).not.toBe(0);
    rememberPassword(conf.client_id, 'wrong-remote-password-5');

    // The store's files, as the running server has them (WAL not yet checkpointed).
    const snapshot = join(tmp.dir, 'snapshot');
    mkdirSync(snapshot);
    const files = ['', '-wal', '-shm'].filter((suffix) => existsSync(db + suffix));
    expect(files).toContain('-wal');
    for (const suffix of files) {
      expect((statSync(db + suffix).mode & 0o777).toString(8), `mode of tokens.db${suffix}`).toBe('600');
      copyFileSync(db + suffix, join(snapshot, 'tokens.db' + suffix));
    }
    for (const suffix of files) expect(leaks(readFileSync(join(snapshot, 'tokens.db' + suffix))), `tokens.db${suffix}`).toEqual([]);

    // The log: it did log the requests (so the scan is not of an empty text), and no secret.
    expect((await server.kill('SIGTERM')).code).toBe(0);
    const output = server.stdout() + server.stderr();
    expect(output).toMatch(/"msg":"request"/);
    expect(output).toMatch(/"status":401/);
    expect(leaks(output)).toEqual([]);
    for (const suffix of ['', '-wal', '-shm']) if (existsSync(db + suffix)) expect(leaks(readFileSync(db + suffix)), `tokens.db${suffix} after stop`).toEqual([]);
  });

  it('CLI commands that do not print secrets print none, in any mode, on success or failure', async () => {
    const [, , , g3, g4] = grants as [Issued, Issued, Issued, Issued, Issued];
    // Read-only commands, human and --json.
    await Promise.all([
      ...[['token', 'list'], ['audit'], ['introspect', g3.refresh_token]].flatMap((args) => [quiet(args, { expectCode: 0 }), quiet([...args, '--json'], { expectCode: 0 })]),
      quiet(['client', 'list', '--json'], { expectCode: 0 }),
      quiet(['client', 'show', conf.client_id], { expectCode: 0 }),
      quiet(['status'], { expectCode: 0 }),
      quiet(['introspect', '--jti', g3.jti, '--json'], { expectCode: 0 }),
      quiet(['introspect', 'tca_' + 'Q'.repeat(43)]),
    ]);
    remember('tca_' + 'Q'.repeat(43));
    // Revocations and their failures.
    await quiet(['revoke', g3.access_token], { expectCode: 0 });
    remember('tcr_' + 'Z'.repeat(43));
    rememberPassword(conf.client_id, 'wrong-cli-password-77');
    const failures = await Promise.all([
      quiet(['revoke', g3.refresh_token, '--json'], { expectCode: 0 }),
      quiet(['revoke', 'tcr_' + 'Z'.repeat(43)]),
      quiet(['revoke', conf.client_secret]), // a secret pasted by mistake
      quiet(['revoke', '--user', 'user-4', '--dry-run'], { expectCode: 0 }),
      // A refresh with a wrong password: the password given is not echoed in the error.
      quiet(['refresh', g4.refresh_token, '--client-id', conf.client_id, '--client-secret', 'wrong-cli-password-77']),
    ]);
    for (const r of failures.slice(1, 3).concat(failures[4]!)) expect(r.code).not.toBe(0);
    await Promise.all([
      quiet(['revoke', g3.refresh_token], { expectCode: 0 }), // already revoked
      quiet(['revoke', '--user', 'user-4', '--yes', '--json'], { expectCode: 0 }),
    ]);
    await quiet(['purge', '--older-than', '0s', '--yes'], { expectCode: 0 });
    await quiet(['client', 'delete', other.client_id, '--yes'], { expectCode: 0 });
    expect(cliOutputs.length).toBeGreaterThanOrEqual(20);
    const found = cliOutputs.flatMap(({ args, r }) => leaks(r.stdout + r.stderr).map((l) => `${args.map(shorten).join(' ')}: ${l}`));
    expect(found).toEqual([]);
  });

  it('the default data directory is 0700 and a store created there 0600, under umask 000', async () => {
    const home = join(tmp.dir, 'home');
    mkdirSync(home);
    const code = await new Promise<number | null>((resolve, reject) => {
      const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, XDG_DATA_HOME: join(home, 'data'), NO_COLOR: '1' };
      delete env.TOKENCTL_DB;
      const child = spawn('sh', ['-c', 'umask 000 && exec "$0" "$@"', process.execPath, BIN, 'client', 'create', '--name', 'first', '--json'], { cwd: home, env, stdio: 'ignore' });
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      child.on('error', reject);
      child.on('exit', (c) => {
        clearTimeout(timer);
        resolve(c);
      });
    });
    expect(code).toBe(0);
    const dataDir = join(home, 'data', 'tokenctl');
    expect((statSync(dataDir).mode & 0o777).toString(8)).toBe('700');
    for (const suffix of ['', '-wal', '-shm']) {
      const file = join(dataDir, 'tokens.db' + suffix);
      if (existsSync(file)) expect((statSync(file).mode & 0o777).toString(8), file).toBe('600');
    }
  });
});

const shorten = (a: string) => (a.length > 16 ? a.slice(0, 8) + '…' : a);
