import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { s256 } from '../../src/engine/authorization/pkce.js';
import { MemoryStore } from '../../src/store/memory/index.js';
import { StoreUnavailableError } from '../../src/store/store.js';
import { dpopKey, makeProof, type DpopKey } from '../helpers/dpop.js';
import { DOORS, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The authorization code flow over HTTP (contract 5): GET /oauth/authorize, the login app's back
 * channel, the development page, the browser's return and the code's exchange, on real sockets.
 */

const REDIRECT = 'http://127.0.0.1:9/callback';
let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(options: { devLogin?: boolean; loginUrl?: string } = {}) {
  server = await startTestServer({ devLogin: options.devLogin ?? true, loginUrl: options.loginUrl ?? '' });
  // As serve does: the issuer is the URL it listens on.
  server.engine.config.issuer = server.url;
  await server.engine.createClient({ id: 'app', name: 'My App', public: true, scope: 'read write', redirectUris: [REDIRECT] }, 'test');
  const login = await server.engine.createClient({ id: 'login-app', name: 'Login', loginProvider: true }, 'test');
  return { s: server, loginSecret: login.client_secret! };
}

/** A browser's cookie jar, enough for one host. */
class Browser {
  private cookies = new Map<string, string>();
  async get(url: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    if (this.cookies.size > 0) headers.set('cookie', [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '));
    const r = await fetch(url, { ...init, headers, redirect: 'manual' });
    for (const c of r.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair!.indexOf('=');
      this.cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
    return r;
  }
}

function authorizeUrl(s: TestServer, params: Record<string, string>): string {
  return `${s.url}/oauth/authorize?${new URLSearchParams(params)}`;
}

const verifier = () => randomBytes(32).toString('base64url');

describe('GET /oauth/authorize with the development login', () => {
  it('logs in as anyone, and the code becomes tokens that refresh, introspect and revoke', async () => {
    const { s } = await start();
    const browser = new Browser();
    const v = verifier();
    const r1 = await browser.get(authorizeUrl(s, { response_type: 'code', client_id: 'app', redirect_uri: REDIRECT, scope: 'read', state: 'abc 123', code_challenge: s256(v), code_challenge_method: 'S256' }));
    expect(r1.status).toBe(302);
    const loginUrl = new URL(r1.headers.get('location')!);
    expect(loginUrl.pathname).toBe('/oauth/dev-login');
    expect(r1.headers.getSetCookie()[0]).toMatch(/HttpOnly/i);
    expect(r1.headers.getSetCookie()[0]).toMatch(/SameSite=Lax/i);

    const page = await browser.get(loginUrl.href);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toMatch(/frame-ancestors 'none'/);
    expect(page.headers.get('content-security-policy')).toMatch(/default-src 'none'/);
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    // Not no-referrer: under it a browser posts the page's form with Origin: null, which is refused.
    expect(page.headers.get('referrer-policy')).toBe('same-origin');
    const html = await page.text();
    expect(html).toContain('My App');
    expect(html).toContain('Development login');
    const csrf = /name="csrf_token" value="([^"]+)"/.exec(html)![1]!;
    const challenge = loginUrl.searchParams.get('login_challenge')!;

    const posted = await browser.get(`${s.url}/oauth/dev-login`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', origin: s.url }, body: new URLSearchParams({ login_challenge: challenge, csrf_token: csrf, username: 'zoe', decision: 'accept' }) });
    expect(posted.status).toBe(303);
    const back = await browser.get(posted.headers.get('location')!);
    expect(back.status).toBe(302);
    const cb = new URL(back.headers.get('location')!);
    expect(cb.origin + cb.pathname).toBe(REDIRECT);
    expect(cb.searchParams.get('state')).toBe('abc 123');
    expect(cb.searchParams.get('iss')).toBe(s.url);

    const token = await s.post('/oauth/token', { grant_type: 'authorization_code', code: cb.searchParams.get('code')!, code_verifier: v, redirect_uri: REDIRECT, client_id: 'app' });
    expect(token.status).toBe(200);
    const body = token.json as Record<string, string>;
    expect(Object.keys(body).sort()).toEqual(['access_token', 'expires_in', 'jti', 'node', 'org_id', 'refresh_token', 'scope', 'stime', 'token_type']);
    expect(body.scope).toBe('read');
    const intro = await s.post('/oauth/introspection', { token: body.access_token!, client_id: 'app' });
    expect(intro.json).toMatchObject({ active: true, username: 'zoe', sub: 'zoe', client_id: 'app' });
    const refreshed = await s.post('/oauth/token', { grant_type: 'refresh_token', refresh_token: body.refresh_token!, client_id: 'app' });
    expect(refreshed.status).toBe(200);
    const replay = await s.post('/oauth/token', { grant_type: 'authorization_code', code: cb.searchParams.get('code')!, code_verifier: v, redirect_uri: REDIRECT, client_id: 'app' });
    expect(replay.status).toBe(400);
    expect(replay.json).toMatchObject({ error: 'invalid_grant' });
    expect((await s.post('/oauth/introspection', { token: body.access_token!, client_id: 'app' })).json).toEqual({ active: false });
  });

  it('Cancel sends access_denied to the client', async () => {
    const { s } = await start();
    const browser = new Browser();
    const r1 = await browser.get(authorizeUrl(s, { response_type: 'code', client_id: 'app', state: 's', code_challenge: s256(verifier()), code_challenge_method: 'S256' }));
    const loginUrl = new URL(r1.headers.get('location')!);
    const html = await (await browser.get(loginUrl.href)).text();
    const csrf = /name="csrf_token" value="([^"]+)"/.exec(html)![1]!;
    const posted = await browser.get(`${s.url}/oauth/dev-login`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ login_challenge: loginUrl.searchParams.get('login_challenge')!, csrf_token: csrf, decision: 'deny' }) });
    const cb = new URL((await browser.get(posted.headers.get('location')!)).headers.get('location')!);
    expect(cb.searchParams.get('error')).toBe('access_denied');
    expect(cb.searchParams.get('state')).toBe('s');
  });

  it('refuses a form posted without the page’s CSRF token, from another origin, or from another browser', async () => {
    const { s } = await start();
    const browser = new Browser();
    const r1 = await browser.get(authorizeUrl(s, { response_type: 'code', client_id: 'app', code_challenge: s256(verifier()), code_challenge_method: 'S256' }));
    const loginUrl = new URL(r1.headers.get('location')!);
    const challenge = loginUrl.searchParams.get('login_challenge')!;
    const html = await (await browser.get(loginUrl.href)).text();
    const csrf = /name="csrf_token" value="([^"]+)"/.exec(html)![1]!;
    const post = (b: Browser, form: Record<string, string>, origin?: string) =>
      b.get(`${s.url}/oauth/dev-login`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...(origin ? { origin } : {}) }, body: new URLSearchParams(form) });
    expect((await post(browser, { login_challenge: challenge, username: 'mallory' })).status).toBe(403);
    expect((await post(browser, { login_challenge: challenge, csrf_token: csrf, username: 'mallory' }, 'https://evil.example')).status).toBe(403);
    expect((await post(new Browser(), { login_challenge: challenge, csrf_token: csrf, username: 'mallory' })).status).toBe(403);
    // Still answerable by the right form.
    expect((await post(browser, { login_challenge: challenge, csrf_token: csrf, username: 'zoe' })).status).toBe(303);
  });
});

describe('the development login behind a proxy that serves the issuer under a path', () => {
  it('posts its form under the issuer’s path, so the proxy can pass it on', async () => {
    const { s } = await start();
    // The proxy publishes the server at <url>/auth and strips /auth before passing a request on.
    const issuer = `${s.url}/auth`;
    s.engine.config.issuer = issuer;
    const strip = (url: string) => url.replace(`${issuer}/`, `${s.url}/`);
    const browser = new Browser();
    const r1 = await browser.get(authorizeUrl(s, { response_type: 'code', client_id: 'app', code_challenge: s256(verifier()), code_challenge_method: 'S256' }));
    const loginUrl = new URL(r1.headers.get('location')!);
    expect(loginUrl.origin + loginUrl.pathname).toBe(`${issuer}/oauth/dev-login`);
    const html = await (await browser.get(strip(loginUrl.href))).text();
    const action = /<form method="post" action="([^"]+)">/.exec(html)![1]!;
    expect(new URL(action, loginUrl).href).toBe(`${issuer}/oauth/dev-login`);
    const csrf = /name="csrf_token" value="([^"]+)"/.exec(html)![1]!;
    const posted = await browser.get(strip(new URL(action, loginUrl).href), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', origin: s.url }, body: new URLSearchParams({ login_challenge: loginUrl.searchParams.get('login_challenge')!, csrf_token: csrf, username: 'zoe' }) });
    expect(posted.status).toBe(303);
    expect(posted.headers.get('location')!.startsWith(`${issuer}/oauth/authorize/continue?`)).toBe(true);
  });
});

describe('GET /oauth/authorize refusals', () => {
  it('a bad client or redirect URI gets a page, never a redirect; the rest goes to the redirect URI', async () => {
    const { s } = await start();
    const b = new Browser();
    const bad = await b.get(authorizeUrl(s, { response_type: 'code', client_id: 'app', redirect_uri: 'https://evil.example/cb' }));
    expect(bad.status).toBe(400);
    expect(bad.headers.get('location')).toBeNull();
    expect(bad.headers.get('content-type')).toMatch(/text\/html/);
    expect(await bad.text()).toContain('is not registered');
    const unknown = await b.get(authorizeUrl(s, { client_id: '<script>alert(1)</script>' }));
    expect(unknown.status).toBe(400);
    expect(await unknown.text()).not.toContain('<script>');
    const noPkce = await b.get(authorizeUrl(s, { response_type: 'code', client_id: 'app', state: 'q' }));
    expect(noPkce.status).toBe(302);
    const to = new URL(noPkce.headers.get('location')!);
    expect(Object.fromEntries(to.searchParams)).toMatchObject({ error: 'invalid_request', state: 'q', iss: s.url });
  });

  it('dpop_jkt (RFC 9449 §10): a malformed one goes back as invalid_request; a bound code needs the key’s proof', async () => {
    const { s } = await start();
    const b = new Browser();
    const v = verifier();
    const params = { response_type: 'code', client_id: 'app', redirect_uri: REDIRECT, state: 'q', code_challenge: s256(v), code_challenge_method: 'S256' };
    const bad = await b.get(authorizeUrl(s, { ...params, dpop_jkt: 'not-a-thumbprint' }));
    expect(bad.status).toBe(302);
    const to = new URL(bad.headers.get('location')!);
    expect(Object.fromEntries(to.searchParams)).toMatchObject({ error: 'invalid_request', state: 'q', iss: s.url });
    expect(to.searchParams.get('error_description')).toMatch(/dpop_jkt must be/);

    const key = await dpopKey();
    const started = await b.get(authorizeUrl(s, { ...params, dpop_jkt: key.jkt }));
    const loginUrl = new URL(started.headers.get('location')!);
    const html = await (await b.get(loginUrl.href)).text();
    const csrf = /name="csrf_token" value="([^"]+)"/.exec(html)![1]!;
    const posted = await b.get(`${s.url}/oauth/dev-login`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', origin: s.url }, body: new URLSearchParams({ login_challenge: loginUrl.searchParams.get('login_challenge')!, csrf_token: csrf, username: 'zoe', decision: 'accept' }) });
    const code = new URL((await b.get(posted.headers.get('location')!)).headers.get('location')!).searchParams.get('code')!;
    const exchange = (dpop?: string) => s.post('/oauth/token', { grant_type: 'authorization_code', code, code_verifier: v, redirect_uri: REDIRECT, client_id: 'app' }, dpop === undefined ? {} : { dpop });
    const proof = (k: DpopKey) => makeProof(k, { iatMs: s.clock.now(), htu: `${s.url}/oauth/token` });
    const without = await exchange();
    expect([without.status, (without.json as { error: string }).error]).toEqual([400, 'invalid_dpop_proof']);
    const other = await exchange(await proof(await dpopKey()));
    expect([other.status, (other.json as { error: string }).error]).toEqual([400, 'invalid_dpop_proof']);
    const ok = await exchange(await proof(key));
    expect(ok.status).toBe(200);
    expect(ok.json).toMatchObject({ token_type: 'DPoP' });
  });

  it('without a login, the endpoint says so and the metadata offers no authorization endpoint', async () => {
    const { s } = await start({ devLogin: false });
    const r = await fetch(authorizeUrl(s, { client_id: 'app' }), { redirect: 'manual' });
    expect(r.status).toBe(404);
    expect(await r.text()).toContain('--login-url');
    const meta = (await (await fetch(`${s.url}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
    expect(meta.authorization_endpoint).toBeUndefined();
    expect(meta.grant_types_supported).toEqual(['refresh_token', 'client_credentials']);
  });

  it('with a login, the metadata has what client libraries discover (RFC 8414, RFC 9207)', async () => {
    const { s } = await start();
    const meta = (await (await fetch(`${s.url}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
    expect(meta).toMatchObject({
      authorization_endpoint: `${s.url}/oauth/authorize`,
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token', 'client_credentials'],
      code_challenge_methods_supported: ['S256'],
      authorization_response_iss_parameter_supported: true,
    });
  });
});

describe('a store fault in the browser’s part', () => {
  it('is a page a person can read, 503 with Retry-After, not the API’s JSON record', async () => {
    const store = new MemoryStore();
    store.createAuthorization = async () => {
      throw new StoreUnavailableError('the store is unavailable (test)');
    };
    server = await startTestServer({ store, devLogin: true });
    await server.engine.createClient({ id: 'app', name: 'My App', public: true, redirectUris: [REDIRECT] }, 'test');
    const r = await fetch(authorizeUrl(server, { response_type: 'code', client_id: 'app', code_challenge: s256(verifier()), code_challenge_method: 'S256' }), { redirect: 'manual' });
    expect(r.status).toBe(503);
    expect(r.headers.get('retry-after')).toBe('2');
    expect(r.headers.get('content-type')).toMatch(/text\/html/);
    expect(await r.text()).toContain('Sign-in is unavailable right now');
  });
});

describe('the login app back channel', () => {
  it('reads, accepts with HTTP Basic as a login provider; the browser ends at the client with a code', async () => {
    const { s, loginSecret } = await start({ devLogin: false, loginUrl: 'https://login.example.test/signin?tenant=1' });
    const browser = new Browser();
    const v = verifier();
    const r1 = await browser.get(authorizeUrl(s, { response_type: 'code', client_id: 'app', scope: 'read write', code_challenge: s256(v), code_challenge_method: 'S256' }));
    const to = new URL(r1.headers.get('location')!);
    expect(to.origin + to.pathname).toBe('https://login.example.test/signin');
    expect(to.searchParams.get('tenant')).toBe('1');
    const challenge = to.searchParams.get('login_challenge')!;
    const basic = 'Basic ' + Buffer.from(`login-app:${loginSecret}`).toString('base64');
    const read = await fetch(`${s.url}/oauth/login-requests/${challenge}`, { headers: { authorization: basic } });
    expect(read.status).toBe(200);
    expect(await read.json()).toMatchObject({ client_id: 'app', client_name: 'My App', scope: 'read write', redirect_uri: REDIRECT });
    expect((await fetch(`${s.url}/oauth/login-requests/${challenge}`)).status).toBe(401);
    expect((await fetch(`${s.url}/oauth/login-requests/${challenge}`, { headers: { authorization: 'Basic ' + Buffer.from('login-app:wrong').toString('base64') } })).status).toBe(401);
    const notJson = await fetch(`${s.url}/oauth/login-requests/${challenge}/accept`, { method: 'POST', headers: { authorization: basic, 'content-type': 'application/json' }, body: '{nope' });
    expect(notJson.status).toBe(400);
    expect(await notJson.json()).toMatchObject({ error: 'invalid_request' });
    const accepted = await fetch(`${s.url}/oauth/login-requests/${challenge}/accept`, { method: 'POST', headers: { authorization: basic, 'content-type': 'application/json' }, body: JSON.stringify({ subject: 'u-1', username: 'ursula', scope: 'read' }) });
    expect(accepted.status).toBe(200);
    const { redirect_to } = (await accepted.json()) as { redirect_to: string };
    const twice = await fetch(`${s.url}/oauth/login-requests/${challenge}/accept`, { method: 'POST', headers: { authorization: basic, 'content-type': 'application/json' }, body: JSON.stringify({ subject: 'u-1' }) });
    expect(twice.status).toBe(409);
    const forged = await fetch(`${s.url}/oauth/login-requests/${'x'.repeat(43)}`, { headers: { authorization: basic } });
    expect(forged.status).toBe(404);
    const back = await browser.get(redirect_to);
    const cb = new URL(back.headers.get('location')!);
    const token = await s.post('/oauth/token', { grant_type: 'authorization_code', code: cb.searchParams.get('code')!, code_verifier: v, client_id: 'app' });
    expect(token.status).toBe(200);
    expect((token.json as { scope: string }).scope).toBe('read');
  });
});

describe('grant_type=client_credentials over HTTP', () => {
  it.each(DOORS)('answers the 2.1 fields without a refresh token (%s)', async (door) => {
    server = await startTestServer({ door });
    const made = await server.engine.createClient({ id: 'cron', name: 'cron', scope: 'jobs', grantTypes: ['client_credentials'] }, 'test');
    const r = await server.post('/oauth/token', { grant_type: 'client_credentials' }, { authorization: 'Basic ' + Buffer.from(`cron:${made.client_secret}`).toString('base64') });
    expect(r.status).toBe(200);
    expect(r.json).not.toHaveProperty('refresh_token');
    expect(r.json).toMatchObject({ token_type: 'bearer', scope: 'jobs' });
  });
});
