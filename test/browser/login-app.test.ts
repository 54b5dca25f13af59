import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { s256 } from '../../src/engine/authorization/pkce.js';
import { ROOT } from '../helpers/node-script.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { HAS_CHROMIUM, launchChromium, NO_CHROMIUM_MESSAGE, startLoopbackApp, type Chromium, type LoopbackApp } from './chromium.js';

/**
 * The worked example of docs/login.md, examples/login-app/app.mjs, run as the operator runs it: a
 * process of its own beside the server (`serve --login-url` pointing at it), authenticated on the
 * back channel as a client created with `--login-provider`, on another site than tokenctl (the
 * binding cookie is SameSite=Lax). The right password ends at the client with a code that
 * becomes tokens; a wrong one stays on the form; Cancel is access_denied.
 */
const APP = join(ROOT, 'examples/login-app/app.mjs');

let s: TestServer;
let login: { child: ChildProcess; url: string };
let providerSecret: string;
/** The login app's URL on another site than tokenctl's (`localhost`, not `127.0.0.1`), as a real one would be. */
let loginUrl: string;
let client: LoopbackApp;

/** Starts the example app with `env` and resolves with its /login URL once it listens. */
function startLoginApp(env: Record<string, string>): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [APP], { env: { ...process.env, PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`the login app did not start: ${out}`)), 15_000);
    const on = (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: m[1]! });
      }
    };
    child.stdout.on('data', on);
    child.stderr.on('data', on);
    child.on('exit', (code) => reject(new Error(`the login app exited (${code}): ${out}`)));
  });
}

beforeAll(async () => {
  // The login URL is known once the app listens; serve reads it per request, as here.
  s = await startTestServer({ loginUrl: 'http://127.0.0.1:9/login' });
  s.engine.config.issuer = s.url;
  await s.engine.createClient({ id: 'notes', name: 'Notes', public: true, scope: 'notes:read notes:write', redirectUris: ['http://127.0.0.1/callback'] }, 'test');
  const provider = await s.engine.createClient({ id: 'login-app', name: 'Login app', loginProvider: true }, 'test');
  providerSecret = provider.client_secret!;
  login = await startLoginApp({ TOKENCTL_URL: s.url, LOGIN_CLIENT_ID: 'login-app', LOGIN_CLIENT_SECRET: providerSecret });
  loginUrl = login.url.replace('//127.0.0.1:', '//localhost:');
  s.engine.config.loginUrl = loginUrl;
  client = await startLoopbackApp();
});
afterAll(async () => {
  login?.child.kill('SIGTERM');
  await client?.close();
  await s?.close();
});

/** An authorization URL of the `notes` client, with PKCE and state. */
function authorizeUrl(state: string): { url: string; verifier: string; redirectUri: string } {
  const verifier = randomBytes(32).toString('base64url');
  const redirectUri = `${client.url}/callback`;
  const query = new URLSearchParams({ response_type: 'code', client_id: 'notes', redirect_uri: redirectUri, scope: 'notes:read', state, code_challenge: s256(verifier), code_challenge_method: 'S256' });
  return { url: `${s.url}/oauth/authorize?${query}`, verifier, redirectUri };
}

describe('the example login app, without a browser', () => {
  it('refuses to start without its settings, saying which', async () => {
    const child = spawn(process.execPath, [APP], { env: { PATH: process.env.PATH ?? '' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code).toBe(2);
    expect(err).toMatch(/TOKENCTL_URL, LOGIN_CLIENT_ID and LOGIN_CLIENT_SECRET/);
  });

  it('an unknown or missing challenge gets a page that says why, from tokenctl’s answer', async () => {
    for (const q of [`?login_challenge=${'x'.repeat(43)}`, '']) {
      const r = await fetch(`${login.url}${q}`);
      expect(r.status).toBe(400);
      const html = await r.text();
      expect(html).toContain('This sign-in cannot go on');
      expect(html).toMatch(/no such login request, or it expired/);
      expect(html).not.toContain('<form');
    }
  });

  it('reads the request from the back channel: the client’s name and the scope asked for', async () => {
    const { url } = authorizeUrl('fetch');
    const r = await fetch(url, { redirect: 'manual' });
    const to = new URL(r.headers.get('location')!);
    expect(to.origin + to.pathname).toBe(loginUrl);
    const page = await fetch(to);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toMatch(/frame-ancestors 'none'/);
    const html = await page.text();
    expect(html).toContain('<h1>Sign in to Notes</h1>');
    expect(html).toContain('It asks for: notes:read');
    expect(html).toContain(`name="login_challenge" value="${to.searchParams.get('login_challenge')}"`);
  });
});

describe('the example login app, set up as an operator may write it', () => {
  it('takes TOKENCTL_URL with a trailing slash, as an issuer is often copied', async () => {
    const second = await startLoginApp({ TOKENCTL_URL: `${s.url}/`, LOGIN_CLIENT_ID: 'login-app', LOGIN_CLIENT_SECRET: providerSecret });
    try {
      const r = await fetch(authorizeUrl('slash').url, { redirect: 'manual' });
      const challenge = new URL(r.headers.get('location')!).searchParams.get('login_challenge')!;
      const page = await fetch(`${second.url}?login_challenge=${challenge}`);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('<h1>Sign in to Notes</h1>');
    } finally {
      second.child.kill('SIGTERM');
    }
  });
});

if (!HAS_CHROMIUM) it.skip(NO_CHROMIUM_MESSAGE, () => undefined);

describe.skipIf(!HAS_CHROMIUM)('the example login app in Chromium', () => {
  let browser: Chromium;
  let page: Page;
  beforeAll(async () => {
    browser = await launchChromium();
    page = browser.page;
  });
  afterAll(() => browser?.close());

  async function openForm(state: string) {
    const started = authorizeUrl(state);
    await page.goto(started.url);
    expect(page.url().startsWith(`${loginUrl}?login_challenge=`)).toBe(true);
    return started;
  }

  async function submit(username: string, password: string) {
    await page.getByLabel('User name').fill(username);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }

  const landed = async (redirectUri: string) => {
    await page.waitForURL((u) => u.href.startsWith(redirectUri));
    return new URL(page.url()).searchParams;
  };

  it('the right password ends at the client with a code, and the code becomes tokens for that user', async () => {
    const { verifier, redirectUri } = await openForm('right');
    await submit('alice', 'correct horse battery staple');
    const cb = await landed(redirectUri);
    expect(cb.get('state')).toBe('right');
    expect(cb.get('iss')).toBe(s.url);
    const token = await s.post('/oauth/token', { grant_type: 'authorization_code', code: cb.get('code')!, code_verifier: verifier, redirect_uri: redirectUri, client_id: 'notes' });
    expect(token.status, token.text).toBe(200);
    const intro = await s.post('/oauth/introspection', { token: token.json.access_token as string, client_id: 'notes' });
    expect(intro.json).toMatchObject({ active: true, sub: 'user-0001', username: 'alice', scope: 'notes:read', client_id: 'notes' });
  });

  it('a wrong password stays on the form with an error, and the same login then succeeds', async () => {
    const { verifier, redirectUri } = await openForm('wrong');
    const answer = page.waitForResponse((r) => r.url() === loginUrl && r.request().method() === 'POST');
    await submit('alice', 'incorrect horse');
    expect((await answer).status()).toBe(401);
    await expect(page.locator('#error').textContent()).resolves.toBe('Wrong user name or password.');
    expect(page.url()).toBe(loginUrl);
    expect(client.callbacks.filter((c) => c.get('state') === 'wrong')).toEqual([]);
    await submit('mallory', 'correct horse battery staple');
    await expect(page.locator('#error').textContent()).resolves.toBe('Wrong user name or password.');

    await submit('alice', 'correct horse battery staple');
    const cb = await landed(redirectUri);
    expect(cb.get('state')).toBe('wrong');
    const token = await s.post('/oauth/token', { grant_type: 'authorization_code', code: cb.get('code')!, code_verifier: verifier, redirect_uri: redirectUri, client_id: 'notes' });
    expect(token.status, token.text).toBe(200);
  });

  it('Cancel sends access_denied to the client, with its state', async () => {
    const { redirectUri } = await openForm('cancel');
    await page.getByRole('button', { name: 'Cancel' }).click();
    const cb = await landed(redirectUri);
    expect(Object.fromEntries(cb)).toEqual({ error: 'access_denied', error_description: 'The user cancelled the sign-in', state: 'cancel', iss: s.url });
  });
});
