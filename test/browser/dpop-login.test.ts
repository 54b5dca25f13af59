import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { calculateJwkThumbprint, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, tokenctl } from '../helpers/cli.js';
import { introspected } from '../helpers/engine.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { HAS_CHROMIUM, launchChromium, NO_CHROMIUM_MESSAGE, signInOnDevPage, type Chromium } from './chromium.js';

/**
 * `tokenctl login --dpop-key` end to end (RFC 9449 §5, contract 8): the built binary runs the code
 * flow while Chromium logs in on the development page; the tokens come out bound to the key
 * (cnf.jkt its thumbprint), a refresh with the same key works, and one with another key does not.
 */

if (!HAS_CHROMIUM) it.skip(NO_CHROMIUM_MESSAGE, () => undefined);

interface Tokens {
  access_token: string;
  refresh_token: string;
  token_type: string;
}

describe.skipIf(!HAS_CHROMIUM)('tokenctl login --dpop-key in Chromium', () => {
  let s: TestServer;
  let browser: Chromium;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tokenctl-dpop-login-'));
    s = await startTestServer({ devLogin: true });
    // As serve does: the issuer is the URL it listens on, which the proofs' htu name.
    s.engine.config.issuer = s.url;
    await s.engine.createClient({ id: 'cli', name: 'CLI', public: true, scope: 'read', redirectUris: ['http://127.0.0.1/callback'] }, 'test');
    browser = await launchChromium();
  });

  /** The server's manual clock brought to the real time, which the CLI's proofs carry in their iat. */
  const realTime = () => s.clock.advance(Math.max(0, Date.now() - s.clock.now()));
  afterAll(async () => {
    await browser?.close();
    await s?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Runs `login` with `args`, logs in as `username` in the browser, and returns what the command printed. */
  async function login(args: string[], username: string): Promise<{ code: number | null; stdout: string; stderr: string; authorization: URL }> {
    realTime();
    const child = spawn(process.execPath, [BIN, 'login', '--url', s.url, '--client-id', 'cli', '--no-browser', '--json', '--timeout', '30s', ...args], { env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    const shown = new Promise<string>((resolve) =>
      child.stderr.setEncoding('utf8').on('data', (d: string) => {
        stderr += d;
        const url = /(http:\/\/127\.0\.0\.1:\d+\/oauth\/authorize\?\S+)/.exec(stderr);
        if (url) resolve(url[1]!);
      }),
    );
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    const authorization = new URL(await shown);
    await signInOnDevPage(browser.page, authorization, username, authorization.searchParams.get('redirect_uri')!);
    return { code: await exited, stdout, stderr, authorization };
  }

  it('binds the tokens to the key; a refresh with that key works, with another it is refused', async () => {
    const keyFile = join(dir, 'dpop.jwk');
    const r = await login(['--dpop-key', 'generate', '--dpop-key-out', keyFile], 'zoe');
    expect(r.code, r.stderr).toBe(0);
    const tokens = JSON.parse(r.stdout) as Tokens;
    expect(tokens.token_type).toBe('DPoP');
    const { d: _d, ...publicJwk } = JSON.parse(readFileSync(keyFile, 'utf8')) as JWK;
    const jkt = await calculateJwkThumbprint(publicJwk, 'sha256');
    expect(r.stderr).toContain(`DPoP key thumbprint (cnf.jkt) ${jkt}`);
    // RFC 9449 §10: the code itself was bound to the key at /authorize.
    expect(r.authorization.searchParams.get('dpop_jkt')).toBe(jkt);
    expect(await introspected(s.engine, tokens.access_token)).toMatchObject({ active: true, username: 'zoe', cnf: { jkt } });
    expect(await introspected(s.engine, tokens.refresh_token)).toMatchObject({ active: true, cnf: { jkt } });

    const remote = ['--url', s.url, '--client-id', 'cli', '--json'];
    realTime();
    const same = await tokenctl(['refresh', tokens.refresh_token, ...remote, '--dpop-key', keyFile], { timeoutMs: 30_000 });
    expect(same.code, same.stderr).toBe(0);
    const refreshed = same.json<Tokens>();
    expect(refreshed.token_type).toBe('DPoP');
    expect(await introspected(s.engine, refreshed.access_token)).toMatchObject({ active: true, cnf: { jkt } });

    const other = await tokenctl(['refresh', tokens.refresh_token, ...remote, '--dpop-key', 'generate'], { timeoutMs: 30_000 });
    expect(other.code).not.toBe(0);
    expect(other.stdout + other.stderr).toMatch(/invalid_dpop_proof/);
    const none = await tokenctl(['refresh', tokens.refresh_token, ...remote], { timeoutMs: 30_000 });
    expect(none.code).not.toBe(0);
    expect(none.stdout + none.stderr).toMatch(/invalid_dpop_proof/);
  }, 90_000);
});
