import { describe, expect, it } from 'vitest';
import { listenForRedirect } from '../../src/remote/loopback-redirect.js';
import { browserCommand, type BrowserEnvironment } from '../../src/remote/open-browser.js';

/** The two small parts of `tokenctl login` around the flow: the loopback listener and the browser opener. */

describe('the loopback redirect listener (RFC 8252 §7.3)', () => {
  it('takes the first GET /callback, answers the browser with the page given, and nothing else', async () => {
    const loopback = await listenForRedirect(0);
    try {
      expect(loopback.redirectUri).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/);
      const base = new URL(loopback.redirectUri);
      const favicon = await fetch(new URL('/favicon.ico', base));
      expect(favicon.status).toBe(404);
      expect((await fetch(loopback.redirectUri, { method: 'POST' })).status).toBe(405);

      const browser = fetch(`${loopback.redirectUri}?code=c&state=s<script>`);
      const cb = await loopback.callback;
      expect(Object.fromEntries(cb.params)).toEqual({ code: 'c', state: 's<script>' });
      await cb.answer({ ok: false, title: 'Nope <b>', text: 'because "x" & y' });
      const page = await browser;
      expect(page.status).toBe(400);
      expect(page.headers.get('cache-control')).toBe('no-store');
      expect(page.headers.get('content-security-policy')).toMatch(/default-src 'none'.*frame-ancestors 'none'/);
      const html = await page.text();
      expect(html).toContain('Nope &#60;b&#62;');
      expect(html).toContain('because &#34;x&#34; &#38; y');

      const second = await fetch(`${loopback.redirectUri}?code=d&state=s`);
      expect(second.status).toBe(409);
    } finally {
      await loopback.close();
    }
  });

  it('says so when the port is taken', async () => {
    const first = await listenForRedirect(0);
    try {
      const port = Number(new URL(first.redirectUri).port);
      await expect(listenForRedirect(port)).rejects.toThrow(`port ${port} on 127.0.0.1 is already in use`);
    } finally {
      await first.close();
    }
  });
});

describe('opening a browser', () => {
  const url = 'https://auth.example.test/oauth/authorize?a=1&b=%25PATH%25';
  const at = (over: Partial<BrowserEnvironment> & { env?: NodeJS.ProcessEnv }): BrowserEnvironment => ({ platform: 'linux', interactive: true, env: { DISPLAY: ':0' }, ...over });

  it('uses the platform’s opener, with the URL as one argument and no shell', () => {
    expect(browserCommand(url, at({}))).toEqual({ command: 'xdg-open', args: [url] });
    expect(browserCommand(url, at({ env: { WAYLAND_DISPLAY: 'wayland-0' } }))).toEqual({ command: 'xdg-open', args: [url] });
    expect(browserCommand(url, at({ platform: 'darwin', env: {} }))).toEqual({ command: 'open', args: [url] });
    expect(browserCommand(url, at({ platform: 'win32', env: {} }))).toEqual({ command: 'rundll32.exe', args: ['url.dll,FileProtocolHandler', url] });
  });

  it('opens nothing without a terminal, in CI, or without a display', () => {
    expect(browserCommand(url, at({ interactive: false }))).toBeNull();
    expect(browserCommand(url, at({ env: { DISPLAY: ':0', CI: 'true' } }))).toBeNull();
    expect(browserCommand(url, at({ env: {} }))).toBeNull();
  });

  it('$BROWSER, when set, is what opens it, even without a terminal, but not in CI', () => {
    expect(browserCommand(url, at({ interactive: false, env: { BROWSER: '/usr/bin/firefox' } }))).toEqual({ command: '/usr/bin/firefox', args: [url] });
    expect(browserCommand(url, at({ env: { BROWSER: '/usr/bin/firefox', CI: '1' } }))).toBeNull();
  });
});
