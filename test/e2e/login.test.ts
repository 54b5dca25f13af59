import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { developmentTls, freePort, startServe, type ServeProcess, type Tls } from '../resource-server/serve-process.js';
import { BIN, ROOT, tokenctl } from '../helpers/cli.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * `tokenctl login` as the built binary: against a real `serve --dev-login` process on a SQLite
 * store, with $BROWSER a script that logs in on the development page (helpers/fake-browser.ts),
 * and stopped with Ctrl-C while it waits.
 */

let dir: string;
let browser: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'tokenctl-login-e2e-'));
  browser = join(dir, 'browser');
  writeFileSync(browser, `#!/bin/sh\ncd '${ROOT}' && exec '${process.execPath}' --import tsx '${join(ROOT, 'test/helpers/fake-browser.ts')}' "$@"\n`);
  chmodSync(browser, 0o755);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('tokenctl login against tokenctl serve', () => {
  let tls: Tls;
  let serve: ServeProcess;
  let db: string;
  let clientId: string;

  beforeAll(async () => {
    tls = await developmentTls();
    db = join(dir, 'tokens.db');
    const created = await tokenctl(['client', 'create', '--db', db, '--name', 'cli', '--public', '--redirect-uri', 'http://127.0.0.1/callback', '--json']);
    expect(created.code, created.stderr).toBe(0);
    clientId = created.json<{ client_id: string }>().client_id;
    serve = startServe(db, tls, await freePort(), ['--dev-login']);
    await serve.up;
  }, 60_000);
  afterAll(async () => {
    await serve?.stop();
  });

  it('logs in through the development page; the token introspects active in the store', async () => {
    const r = await tokenctl(['login', '--url', serve.url, '--client-id', clientId, '--ca', tls.certFile, '--scope', 'read', '--json', '--timeout', '30s'], {
      env: { BROWSER: browser, CI: undefined, NODE_EXTRA_CA_CERTS: tls.certFile, FAKE_BROWSER_USER: 'zoe' },
      timeoutMs: 40_000,
    });
    expect(r.code, r.stderr).toBe(0);
    const tokens = r.json<Record<string, string>>();
    expect(Object.keys(tokens).sort()).toEqual(['access_token', 'expires_in', 'jti', 'node', 'org_id', 'refresh_token', 'scope', 'stime', 'token_type']);
    expect(r.stderr).not.toMatch(/tcc_/);
    const intro = await tokenctl(['introspect', '--db', db, tokens.access_token!, '--json']);
    expect(intro.json()).toMatchObject({ active: true, username: 'zoe', client_id: clientId, scope: 'read' });
  });
});

describe('tokenctl login and Ctrl-C', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ devLogin: true });
    server.engine.config.issuer = server.url;
    await server.engine.createClient({ id: 'cli', name: 'cli', public: true, redirectUris: ['http://127.0.0.1/callback'] }, 'test');
  });
  afterAll(() => server?.close());

  it('stops waiting at Ctrl-C, closes its listener and exits 130', async () => {
    const child = spawn(process.execPath, [BIN, 'login', '--url', server.url, '--client-id', 'cli', '--no-browser'], { env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    const waiting = new Promise<void>((resolve) =>
      child.stderr.setEncoding('utf8').on('data', (d: string) => {
        stderr += d;
        if (stderr.includes('Waiting for the login')) resolve();
      }),
    );
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    await waiting;
    const port = Number(/redirect_uri=http%3A%2F%2F127\.0\.0\.1%3A(\d+)/.exec(stderr)![1]);
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    expect(stderr).toContain('Ctrl-C: stopping the login');
    expect(stderr).toContain('login cancelled: nothing was issued');
    await expect(fetch(`http://127.0.0.1:${port}/callback`)).rejects.toThrow();
  });
});
