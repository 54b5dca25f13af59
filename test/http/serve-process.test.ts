import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { remoteIntrospect } from '../../src/remote/http-client.js';
import { inheritedSettings } from '../helpers/env.js';

/**
 * `tokenctl serve` as a real process (`node bin/run.js serve`, needs `npm run build`): it prints
 * `listening on <URL>`, answers, and exits 0 on SIGTERM/SIGINT. Plus the README's promise: the
 * curl commands `--demo` prints work when pasted.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = join(ROOT, 'bin/run.js');
const run = promisify(execFile);

interface Served {
  child: ChildProcess;
  url: string;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

let sandbox: string;
const children: ChildProcess[] = [];

/** A `$BROWSER` that signs in on the development page (test/helpers/fake-browser.ts). */
function fakeBrowser(dir: string): string {
  const file = join(dir, 'fake-browser.sh');
  writeFileSync(file, `#!/bin/sh\ncd '${ROOT}' && exec '${process.execPath}' --import tsx '${join(ROOT, 'test/helpers/fake-browser.ts')}' "$@"\n`, { mode: 0o755 });
  return file;
}

function env(): NodeJS.ProcessEnv {
  const e: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', TOKENCTL_DATA_DIR: join(sandbox, 'data'), HOME: sandbox };
  for (const key of inheritedSettings(e)) delete e[key];
  return e;
}

/** Starts `tokenctl serve …` and resolves once it printed `listening on`, or rejects with what it printed. */
function serve(args: string[], extraEnv: Record<string, string> = {}): Promise<Served> {
  const child = spawn(process.execPath, [BIN, 'serve', ...args], { cwd: sandbox, env: { ...env(), ...extraEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  let err = '';
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => child.on('exit', (code, signal) => res({ code, signal })));
  return new Promise((resolvePromise, reject) => {
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      const m = /^listening on (\S+)$/m.exec(out);
      if (m) resolvePromise({ child, url: m[1]!, stdout: () => out, stderr: () => err, exit });
    });
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
    void exit.then(({ code }) => reject(new Error(`serve exited (${code}) before listening:\n${out}\n--- stderr:\n${err}`)));
  });
}

function tokenctl(args: string[], options: { env?: Record<string, string> } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return run(process.execPath, [BIN, ...args], { cwd: sandbox, env: { ...env(), ...options.env } }).then(
    (r) => ({ code: 0, ...r }),
    (e: { code?: number; stdout?: string; stderr?: string }) => ({ code: e.code ?? 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' }),
  );
}

describe('tokenctl serve (real process)', () => {
  beforeAll(() => {
    if (!existsSync(join(ROOT, 'dist/commands/serve.js')) || !existsSync(join(ROOT, 'oclif.manifest.json'))) {
      throw new Error('tokenctl is not built: run `npm run build` before these tests');
    }
  });
  afterEach(() => {
    for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  });
  beforeAll(() => {
    sandbox = mkdtempSync(join(tmpdir(), 'tokenctl-serve-'));
  });
  afterAll(() => rmSync(sandbox, { recursive: true, force: true }));

  it('--port 0 on loopback: prints the real URL, warns about plain HTTP, answers, exits 0 on SIGTERM', async () => {
    const db = join(sandbox, 'plain.db');
    const s = await serve(['--port', '0', '--db', db, '--log-level', 'warn']);
    expect(s.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(s.stdout().trim().split('\n')).toEqual([`listening on ${s.url}`]);
    expect(s.stderr()).toMatch(/plain HTTP/);
    expect(s.stderr()).toMatch(/no clients yet/);

    const health = await fetch(s.url + '/healthz');
    expect(health.status).toBe(200);
    const meta = (await (await fetch(s.url + '/.well-known/oauth-authorization-server')).json()) as Record<string, string>;
    expect(meta.issuer).toBe(s.url); // no --issuer: the URL it listens on
    const bad = await fetch(s.url + '/oauth/introspection', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'token=x&token_type_hint=access_token&client_id=nobody' });
    expect(bad.status).toBe(401);

    s.child.kill('SIGTERM');
    expect(await s.exit).toEqual({ code: 0, signal: null });
    expect(s.stderr()).toMatch(/SIGTERM/);
    // The store was closed cleanly: another process can use it at once.
    const list = await tokenctl(['client', 'list', '--db', db, '--json']);
    expect(list.code, list.stderr).toBe(0);
  });

  it('--demo: HTTPS with a development certificate, and the printed curl commands work as pasted', async () => {
    const s = await serve(['--demo', '--port', '0', '--db', join(sandbox, 'demo.db'), '--node', 'demo-node']);
    expect(s.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const out = s.stdout();
    const secret = /client_secret\s+(\S+)/.exec(out)![1]!;
    const access = /access_token\s+(tca_\S+)/.exec(out)![1]!;
    const certFile = /--cacert '([^']+)'/.exec(out)![1]!;
    expect(existsSync(certFile)).toBe(true);

    // The tokens are real: the CLI's remote client, trusting the printed certificate.
    const seen = await remoteIntrospect({ url: s.url, clientId: 'demo-client', clientSecret: secret, ca: certFile }, access, 'access_token');
    expect(seen).toMatchObject({ active: true, client_id: 'demo-client', iss: s.url });

    // Every command block, in the order printed, run by bash exactly as a user would paste it.
    const blocks = out.split('\n\n').map((b) => b.split('\n').filter((l) => !l.startsWith('#')).join('\n')).filter((b) => /^(curl|\S*bin\/run\.js) /.test(b));
    // tokenctl is not on this PATH: the launcher this server was started with, by its path (the sandbox is outside the repository).
    expect(blocks.map((b) => b.split(' ')[0])).toEqual(['curl', 'curl', BIN, 'curl', BIN]);
    expect(blocks[4]).toMatch(/ login --url \S+ --client-id demo-app --ca /);
    expect(blocks[2]).not.toContain('--client-secret');
    expect(blocks[2]).not.toContain(secret);
    const curlAvailable = await run('curl', ['--version']).then(() => true, () => false);
    const results: unknown[] = [];
    for (const block of blocks) {
      if (block.startsWith('curl') && !curlAvailable) continue;
      // No terminal to prompt on: the secret comes from the environment, as the printed comment says.
      // The login's browser: a script that signs in on the development page (helpers/fake-browser.ts).
      const login = / login /.test(block) ? { BROWSER: fakeBrowser(sandbox), CI: undefined, NODE_EXTRA_CA_CERTS: certFile, FAKE_BROWSER_USER: 'pat' } : {};
      const r = await run('bash', ['-c', block], { cwd: sandbox, env: { ...env(), TOKENCTL_CLIENT_SECRET: secret, ...login } });
      results.push(block.startsWith('curl') ? JSON.parse(r.stdout) : r.stdout);
    }
    if (curlAvailable) {
      expect(results[0]).toMatchObject({ token_type: 'bearer', node: 'demo-node', org_id: 'demo-org' });
      expect(results[1]).toMatchObject({ active: true, token_type: 'access_token', client_id: 'demo-client' });
      expect(results[2]).toMatch(/ACTIVE/);
      expect(results[3]).toMatchObject({ code: 'token_revoke_success' });
    }
    // The login line, as printed: a real login on the development page, tokens printed.
    expect(results.at(-1)).toMatch(/tca_/);

    s.child.kill('SIGINT');
    expect((await s.exit).code).toBe(0);
  });

  it('--demo on a store that already has the demo client re-keys it: the new secret works', async () => {
    const db = join(sandbox, 'demo-again.db');
    for (let i = 0; i < 2; i++) {
      const s = await serve(['--demo', '--port', '0', '--db', db, '--log-level', 'warn']);
      const secret = /client_secret\s+(\S+)/.exec(s.stdout())![1]!;
      const access = /access_token\s+(tca_\S+)/.exec(s.stdout())![1]!;
      const certFile = /--cacert '([^']+)'/.exec(s.stdout())![1]!;
      expect((await remoteIntrospect({ url: s.url, clientId: 'demo-client', clientSecret: secret, ca: certFile }, access, 'access_token')).active).toBe(true);
      s.child.kill('SIGTERM');
      expect((await s.exit).code).toBe(0);
    }
  });

  it('a non-loopback address without TLS: refuses to start, says how to fix it, opens no store', async () => {
    const db = join(sandbox, 'refused.db');
    const r = await tokenctl(['serve', '--host', '0.0.0.0', '--port', '0', '--db', db]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/refusing to serve plain HTTP on 0\.0\.0\.0/);
    expect(r.stderr).toMatch(/--tls-cert/);
    expect(r.stderr).toMatch(/--tls-self-signed/);
    expect(existsSync(db)).toBe(false);
  });

  it('a non-loopback address with --tls-self-signed starts over HTTPS', async () => {
    const s = await serve(['--host', '0.0.0.0', '--tls-self-signed', '--port', '0', '--db', join(sandbox, 'wild.db'), '--log-level', 'warn']);
    expect(s.url).toMatch(/^https:\/\//);
    expect(s.stderr()).toMatch(/certificate: .*\.cert\.pem/);
    s.child.kill('SIGTERM');
    expect(await s.exit, s.stderr()).toEqual({ code: 0, signal: null });
  });

  it('every flag from the environment too (TOKENCTL_<FLAG>), the flag winning over its variable', async () => {
    // TOKENCTL_HOST alone would refuse plain HTTP on 0.0.0.0; --host on the command line wins.
    const s = await serve(['--host', '127.0.0.1', '--port', '0', '--db', join(sandbox, 'env.db')], { TOKENCTL_HOST: '0.0.0.0', TOKENCTL_METRICS_PORT: '0', TOKENCTL_LOG_LEVEL: 'warn' });
    try {
      expect(s.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const metrics = /metrics on (http:\/\/127\.0\.0\.1:\d+\/metrics)/.exec(s.stderr())?.[1];
      expect(metrics, s.stderr()).toBeDefined();
      const scrape = await (await fetch(metrics!)).text();
      expect(scrape).toMatch(/^tokenctl_ready 1$/m);
    } finally {
      s.child.kill('SIGTERM');
      expect((await s.exit).code).toBe(0);
    }
    const refused = await tokenctl(['serve', '--port', '0', '--db', join(sandbox, 'env-refused.db')], { env: { TOKENCTL_HOST: '0.0.0.0' } });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/refusing to serve plain HTTP on 0\.0\.0\.0/);
    const bad = await tokenctl(['serve', '--port', '0', '--db', join(sandbox, 'env-bad.db')], { env: { TOKENCTL_ACCESS_TTL: '30' } });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/not a duration/);
  });

  it.each([
    [['--rotate-refresh-tokens', '--refresh-grace', '90s'], /60s/],
    [['--refresh-grace', '10s'], /rotate-refresh-tokens/],
    [['--access-ttl', '30'], /not a duration/],
    [['--tls-cert', 'x.pem'], /tls-key/],
    // The metrics listener's own error (metrics/listener.ts), mapped by the command.
    [['--metrics-port', '0', '--metrics-host', '192.0.2.1'], /metrics: cannot listen on 192\.0\.2\.1: no such address on this machine/],
  ])('bad flags %j: exit 2 with a message', async (flags, message) => {
    const r = await tokenctl(['serve', '--port', '0', '--db', join(sandbox, 'flags.db'), ...flags]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
  });
});
