import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { s256 } from '../../src/engine/authorization/pkce.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { HAS_CHROMIUM, launchChromium, type InPage, NO_CHROMIUM_MESSAGE, startLoopbackApp, watchConsole, type Chromium, type LoopbackApp } from './chromium.js';

/**
 * The development login page (`serve --dev-login`, contract 5) in a real browser: styled under
 * its own Content-Security-Policy, usable with the keyboard alone, not framable
 * (`frame-ancestors 'none'`, RFC 6749 §10.13), and clear when the challenge is stale or forged.
 */

if (!HAS_CHROMIUM) it.skip(NO_CHROMIUM_MESSAGE, () => undefined);

/** What Chromium says when a Content-Security-Policy stops something (an inline style, a frame). */
const CSP_MESSAGE = /Content Security Policy|Refused to/i;

describe.skipIf(!HAS_CHROMIUM)('the development login page in Chromium', () => {
  let s: TestServer;
  let app: LoopbackApp;
  let browser: Chromium;
  let page: Page;
  let seen: ReturnType<typeof watchConsole>;
  let shots: string;

  beforeAll(async () => {
    // Made here, not at collection, so that a skipped run leaves nothing behind.
    shots = mkdtempSync(join(tmpdir(), 'tokenctl-shots-'));
    s = await startTestServer({ devLogin: true });
    // As serve does: the issuer is the URL it listens on.
    s.engine.config.issuer = s.url;
    await s.engine.createClient({ id: 'app', name: 'Notes App', public: true, scope: 'notes:read notes:write', redirectUris: ['http://127.0.0.1/callback'] }, 'test');
    app = await startLoopbackApp((_req, res, url) => {
      if (url.pathname !== '/frame') return false;
      // Another origin framing the login page, beside a frame of the same server that may be framed.
      const login = url.searchParams.get('src')!;
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<!doctype html><title>framer</title>
<iframe id="login" name="login" src="${login.replace(/"/g, '&quot;')}" width="600" height="600"></iframe>
<iframe id="control" name="control" src="${s.url}/.well-known/oauth-authorization-server" width="300" height="300"></iframe>`);
      return true;
    });
    browser = await launchChromium({ colorScheme: 'light', viewport: { width: 800, height: 900 } });
    page = browser.page;
    seen = watchConsole(page);
  });

  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await s?.close();
    if (shots) rmSync(shots, { recursive: true, force: true });
  });

  afterEach(() => {
    // Every page of this file's own tab obeys its CSP: nothing refused, nothing thrown.
    expect(seen.messages.splice(0).filter((m) => CSP_MESSAGE.test(m))).toEqual([]);
    expect(seen.errors.splice(0)).toEqual([]);
  });

  /** Starts a login as the app would (PKCE S256, state) and returns on the development page. */
  async function beginLogin(state: string): Promise<{ verifier: string; loginUrl: URL }> {
    const verifier = randomBytes(32).toString('base64url');
    const query = new URLSearchParams({ response_type: 'code', client_id: 'app', redirect_uri: `${app.url}/callback`, scope: 'notes:read', state, code_challenge: s256(verifier), code_challenge_method: 'S256' });
    const response = await page.goto(`${s.url}/oauth/authorize?${query}`);
    expect(response?.status()).toBe(200);
    const loginUrl = new URL(page.url());
    expect(loginUrl.origin + loginUrl.pathname).toBe(`${s.url}/oauth/dev-login`);
    return { verifier, loginUrl };
  }

  /** The authorization response the app received, once the browser is back there. */
  async function landed(): Promise<URLSearchParams> {
    await page.waitForURL((u) => u.href.startsWith(`${app.url}/callback`));
    return app.callbacks.at(-1)!;
  }

  const style = (selector: string, property: string) =>
    page.locator(selector).first().evaluate((el, p) => (globalThis as unknown as InPage).getComputedStyle(el).getPropertyValue(p), property);

  it('renders styled under its CSP: the badge, the primary button, the card, a screenshot', async () => {
    const answer = page.waitForResponse((r) => r.url().includes('/oauth/dev-login'));
    await beginLogin('styled');
    const csp = (await answer).headers()['content-security-policy']!;
    await expect(page.locator('.badge').textContent()).resolves.toMatch(/^Development login: any user name is accepted$/);
    await expect(page.locator('h1').textContent()).resolves.toBe('Sign in to Notes App');
    await expect(page.locator('ul.scopes li').allTextContents()).resolves.toEqual(['notes:read']);

    // The one inline style sheet is what the policy's hash allows (CSP 3 §8.3), so it applies.
    const css = await page.locator('style').textContent();
    expect(csp).toContain(`'sha256-${createHash('sha256').update(css!).digest('base64')}'`);
    expect(csp).not.toMatch(/unsafe-inline/);
    expect(await style('button.primary', 'background-color')).toBe('rgb(31, 95, 209)');
    expect(await style('button.primary', 'color')).toBe('rgb(255, 255, 255)');
    expect(await style('button[value=deny]', 'background-color')).toBe('rgba(0, 0, 0, 0)');
    expect(await style('.badge', 'background-color')).toBe('rgb(255, 244, 214)');
    expect(await style('main', 'border-radius')).toBe('12px');
    expect(await style('body', 'background-color')).toBe('rgb(244, 245, 247)');

    const file = join(shots, 'dev-login.png');
    await page.screenshot({ path: file, fullPage: true });
    const png = readFileSync(file);
    expect(png.subarray(1, 4).toString('latin1')).toBe('PNG');
    // IHDR: the width is the viewport's, and a styled page is more than a blank one compresses to.
    expect(png.readUInt32BE(16)).toBe(800);
    expect(png.length).toBeGreaterThan(10_000);

    await page.emulateMedia({ colorScheme: 'dark' });
    expect(await style('button.primary', 'background-color')).toBe('rgb(122, 167, 255)');
    expect(await style('body', 'background-color')).toBe('rgb(21, 23, 26)');
    await page.emulateMedia({ colorScheme: 'light' });
  });

  it('with the keyboard alone: focus starts in the user name, typing a name and Enter logs in', async () => {
    const { verifier } = await beginLogin('keys 1');
    expect(await page.evaluate(() => (globalThis as unknown as InPage).document.activeElement?.id)).toBe('username');
    await page.keyboard.type('zoe');
    await page.keyboard.press('Enter');
    const cb = await landed();
    expect(cb.get('state')).toBe('keys 1');
    expect(cb.get('iss')).toBe(s.url);
    expect(cb.get('code')).toMatch(/^tcc_/);
    await expect(page.locator('#app').textContent()).resolves.toBe('back at the app');

    const token = await s.post('/oauth/token', { grant_type: 'authorization_code', code: cb.get('code')!, code_verifier: verifier, redirect_uri: `${app.url}/callback`, client_id: 'app' });
    expect(token.status, token.text).toBe(200);
    const intro = await s.post('/oauth/introspection', { token: token.json.access_token as string, client_id: 'app' });
    expect(intro.json).toMatchObject({ active: true, username: 'zoe', sub: 'zoe', scope: 'notes:read' });
  });

  it('Tab reaches Sign in, then Cancel, each with a visible focus ring; Enter on Cancel is access_denied', async () => {
    await beginLogin('keys 2');
    const focused = () =>
      page.evaluate(() => {
        const w = globalThis as unknown as InPage;
        return { text: w.document.activeElement?.textContent, outline: w.getComputedStyle(w.document.activeElement).outlineWidth };
      });
    // Autofocus applies once the page is laid out: on a busy machine, after load.
    await expect.poll(() => page.evaluate(() => (globalThis as unknown as InPage).document.activeElement?.id)).toBe('username');
    await page.keyboard.press('Tab');
    expect(await focused()).toEqual({ text: 'Sign in', outline: '3px' });
    await page.keyboard.press('Tab');
    expect(await focused()).toEqual({ text: 'Cancel', outline: '3px' });
    await page.keyboard.press('Enter');
    const cb = await landed();
    expect(Object.fromEntries(cb)).toEqual({ error: 'access_denied', error_description: 'The user cancelled the sign-in', state: 'keys 2', iss: s.url });
  });

  it('refuses to be framed by another origin, while a frame of the same server without the policy renders', async () => {
    const { loginUrl } = await beginLogin('framed');
    const framer = await browser.context.newPage();
    const framerSeen = watchConsole(framer);
    try {
      await framer.goto(`${app.url}/frame?src=${encodeURIComponent(loginUrl.href)}`);
      const control = framer.frame({ name: 'control' })!;
      await control.waitForLoadState();
      await expect(control.locator('body').textContent()).resolves.toContain('"authorization_endpoint"');
      const login = framer.frame({ name: 'login' })!;
      await login.waitForLoadState();
      expect(await login.locator('#username').count()).toBe(0);
      expect(login.url()).not.toContain('/oauth/dev-login');
      await expect.poll(() => framerSeen.messages.filter((m) => /frame-ancestors 'none'/.test(m)).length).toBeGreaterThan(0);
    } finally {
      await framer.close();
    }
    // The request itself was still good: the same page renders at the top level.
    await page.goto(loginUrl.href);
    expect(await page.locator('#username').count()).toBe(1);
  });

  it('a stale, forged, answered or cookie-less login_challenge, or an unregistered redirect URI, gets a clear page, styled, without a form', async () => {
    const expectPage = async (url: string, title: string) => {
      const r = await page.goto(url);
      expect(r?.status()).toBe(400);
      await expect(page.locator('h1').textContent()).resolves.toBe(title);
      expect(await page.locator('form').count()).toBe(0);
      expect(await style('h1', 'color')).toBe('rgb(179, 38, 30)');
    };
    await expectPage(`${s.url}/oauth/dev-login?login_challenge=${'A'.repeat(43)}`, 'This sign-in has expired');
    await expectPage(`${s.url}/oauth/dev-login?login_challenge=%3Cscript%3E`, 'This sign-in has expired');
    await expectPage(`${s.url}/oauth/dev-login`, 'This sign-in has expired');

    const { loginUrl } = await beginLogin('stale');
    const now = s.clock.now();
    s.clock.advance(10 * 60_000 + 1000);
    try {
      await expectPage(loginUrl.href, 'This sign-in has expired');
    } finally {
      s.clock.set(now);
    }

    const answered = await beginLogin('answered');
    await page.keyboard.type('yann');
    await page.keyboard.press('Enter');
    expect((await landed()).get('code')).toMatch(/^tcc_/);
    await expectPage(answered.loginUrl.href, 'This sign-in is already done');

    // RFC 6749 §4.1.2.1: an unregistered redirect URI is told on a page, never followed.
    const evil = new URLSearchParams({ response_type: 'code', client_id: 'app', redirect_uri: 'https://evil.example/cb', state: 'x' });
    await expectPage(`${s.url}/oauth/authorize?${evil}`, 'This sign-in request is not valid');
    expect(page.url().startsWith(`${s.url}/oauth/authorize?`)).toBe(true);
    await expect(page.locator('main').textContent()).resolves.toContain('is not registered for client "app"');

    await beginLogin('no cookie');
    const loginUrl2 = page.url();
    await browser.context.clearCookies();
    await expectPage(loginUrl2, 'This sign-in was not started here');
  });
});
