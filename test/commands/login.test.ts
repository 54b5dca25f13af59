import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runCommand } from '../helpers/run-command.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * `tokenctl login` as a user runs it, in this process, against the in-process server with the
 * development login. The browser is $BROWSER: a script (helpers/fake-browser.ts) that goes
 * through the login page as a user would, so the command's own opener is what starts it.
 */

const ROOT = join(import.meta.dirname, '../..');
let dir: string;
let browser: string;
let server: TestServer | undefined;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'tokenctl-login-'));
  browser = join(dir, 'browser');
  writeFileSync(browser, `#!/bin/sh\ncd '${ROOT}' && exec '${process.execPath}' --import tsx '${join(ROOT, 'test/helpers/fake-browser.ts')}' "$@"\n`);
  chmodSync(browser, 0o755);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(devLogin = true): Promise<TestServer> {
  server = await startTestServer({ devLogin });
  // As serve does: the issuer is the URL it listens on.
  server.engine.config.issuer = server.url;
  await server.engine.createClient({ id: 'cli', name: 'The CLI', public: true, scope: 'read write', redirectUris: ['http://127.0.0.1/callback'] }, 'test');
  return server;
}

function login(s: TestServer, args: string[], env: Record<string, string> = {}) {
  const log = join(dir, `browser-${Math.random().toString(36).slice(2)}.log`);
  const timeout = args.includes('--timeout') ? [] : ['--timeout', '20s'];
  const run = runCommand(['login', '--url', s.url, '--client-id', 'cli', ...timeout, ...args], { env: { BROWSER: browser, CI: undefined as unknown as string, FAKE_BROWSER_LOG: log, ...env } });
  return run.then((r) => ({ ...r, browserLog: () => browserLog(log) }));
}

/** What the browser script wrote once it read the last page: it may finish just after the command. */
async function browserLog(file: string): Promise<string> {
  for (let i = 0; i < 100; i++) {
    // Its line whole: the file exists, empty, for a moment before the line is written.
    const text = existsSync(file) ? readFileSync(file, 'utf8') : '';
    if (text.endsWith('\n')) return text;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`the browser wrote nothing to ${file}`);
}

describe('tokenctl login', () => {
  it('--json prints exactly the token response, whose access token is active for the user who logged in', async () => {
    const s = await start();
    const r = await login(s, ['--scope', 'read', '--json'], { FAKE_BROWSER_USER: 'ursula' });
    expect(r.code, r.stderr).toBe(0);
    const tokens = r.json() as Record<string, string>;
    expect(Object.keys(tokens).sort()).toEqual(['access_token', 'expires_in', 'jti', 'node', 'org_id', 'refresh_token', 'scope', 'stime', 'token_type']);
    expect(tokens.scope).toBe('read');
    const intro = await s.engine.introspectAsClient({ credentials: { clientId: 'cli', secrets: [] }, token: tokens.access_token! });
    expect(intro.result).toMatchObject({ active: true, username: 'ursula', client_id: 'cli' });
    // The URL to open is on stderr, stdout keeps only the document; the browser was told it is done.
    expect(r.stderr).toMatch(new RegExp(`Open this URL in a browser to log in to ${s.url} as client cli:\\n\\n  ${s.url}/oauth/authorize\\?response_type=code&client_id=cli&redirect_uri=http%3A%2F%2F127\\.0\\.0\\.1%3A\\d+%2Fcallback&state=`));
    expect(r.stderr).toContain('A browser was opened at it.');
    expect(r.stderr).not.toMatch(/tcc_/);
    expect(await r.browserLog()).toMatch(/^200 .*You can close this tab/);
  });

  it('without --json, the readable token response on stdout', async () => {
    const s = await start();
    const r = await login(s, []);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^access_token: +tca_/m);
    expect(r.stdout).toMatch(/^refresh_token: +tcr_/m);
    expect(r.stdout).toMatch(/^scope: +read write$/m);
    expect(r.stderr).toContain('Tokens are shown only when issued');
  });

  it('Cancel on the login page: the server’s error, exit 1', async () => {
    const s = await start();
    const r = await login(s, ['--json'], { FAKE_BROWSER_DENY: '1' });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    const { error } = JSON.parse(r.stderr.trim().split('\n').at(-1)!) as { error: Record<string, string> };
    expect(error).toMatchObject({ code: 'authorization_error', message: 'the server refused the login: access_denied: The user cancelled the sign-in' });
    expect(await r.browserLog()).toMatch(/^400 .*The login did not complete/);
  });

  it('a server without a login is refused with what its operator can do, and nothing is opened', async () => {
    const s = await start(false);
    const r = await login(s, []);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('has no login: its metadata has no authorization_endpoint');
    expect(r.stderr).toMatch(/--login-url URL.*--dev-login or --demo/);
    expect(r.stderr).not.toContain('Open this URL');
  });

  it('--no-browser only prints the URL, and --timeout bounds the wait', async () => {
    const s = await start();
    const r = await login(s, ['--no-browser', '--timeout', '100ms']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('Open this URL in a browser');
    expect(r.stderr).not.toContain('A browser was opened');
    expect(r.stderr).toContain('no login within 100ms: nothing was issued');
    expect(r.stderr).toContain('--timeout gives more time');
  });

  it('needs a server and a client', async () => {
    const r = await runCommand(['login', '--client-id', 'cli']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('no server to talk to: give --url or --profile');
  });
});
