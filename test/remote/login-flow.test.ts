import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RemoteOptions } from '../../src/remote/http-client.js';
import { RemoteError } from '../../src/remote/http-client.js';
import { login, LoginError, s256, type LoginOptions } from '../../src/remote/login-flow.js';
import { devLogin, type DevLoginChoice, type DevLoginOutcome } from '../helpers/browser.js';
import { selfSignedCertificate } from '../../src/serve/tls.js';
import { fetchTrusting, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * `tokenctl login`'s flow (src/remote/login-flow.ts) against the real server with the
 * development login: the "browser" is fetch with a cookie jar going through the login page.
 */

const REDIRECT = 'http://127.0.0.1/callback';
let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(options: { devLogin?: boolean } = {}): Promise<{ s: TestServer; webSecret: string }> {
  server = await startTestServer({ devLogin: options.devLogin ?? true });
  // As serve does: the issuer is the URL it listens on.
  server.engine.config.issuer = server.url;
  await server.engine.createClient({ id: 'cli', name: 'The CLI', public: true, scope: 'read write', redirectUris: [REDIRECT] }, 'test');
  const web = await server.engine.createClient({ id: 'web', name: 'Web', scope: 'read', redirectUris: [REDIRECT] }, 'test');
  return { s: server, webSecret: web.client_secret! };
}

interface Run {
  result: Promise<Awaited<ReturnType<typeof login>>>;
  /** What the browser saw; undefined when it was never opened. */
  browser: () => Promise<DevLoginOutcome | undefined>;
  notices: string[];
  opened: string[];
}

/** Runs the flow with a browser that logs in on the development page as `choice` says. */
function run(s: TestServer, overrides: Partial<Omit<LoginOptions, 'remote'>> & { remote?: Partial<RemoteOptions> } = {}, choice: DevLoginChoice = {}): Run {
  const notices: string[] = [];
  const opened: string[] = [];
  let browsing: Promise<DevLoginOutcome> | undefined;
  const { remote, ...rest } = overrides;
  const result = login({
    remote: { url: s.url, clientId: 'cli', ...remote },
    port: 0,
    timeoutMs: 10_000,
    notice: (t) => notices.push(t),
    openUrl: async (url) => {
      opened.push(url);
      // Started, not awaited: a real browser runs on its own while the flow waits.
      browsing = devLogin(url, choice);
      return true;
    },
    ...rest,
  });
  return { result, browser: async () => browsing, notices, opened };
}

async function failure(p: Promise<unknown>): Promise<LoginError> {
  const err = await p.then(
    () => new Error('the login succeeded'),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(LoginError);
  return err as LoginError;
}

function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

describe('tokenctl login: the flow', () => {
  it('logs a public client in: PKCE S256, the loopback redirect, and a 2.1 token response that introspects active', async () => {
    const { s } = await start();
    const r = run(s, { scope: 'read' }, { username: 'zoe' });
    const tokens = await r.result;
    expect(Object.keys(tokens).sort()).toEqual(['access_token', 'expires_in', 'jti', 'node', 'org_id', 'refresh_token', 'scope', 'stime', 'token_type']);
    expect(tokens).toMatchObject({ token_type: 'bearer', scope: 'read', node: 'node-t' });
    const intro = await s.engine.introspectAsClient({ credentials: { clientId: 'cli', secrets: [] }, token: tokens.access_token });
    expect(intro.result).toMatchObject({ active: true, username: 'zoe', sub: 'zoe', client_id: 'cli', scope: 'read' });

    const asked = new URL(r.opened[0]!);
    expect(asked.origin + asked.pathname).toBe(`${s.url}/oauth/authorize`);
    expect(Object.fromEntries(asked.searchParams)).toMatchObject({ response_type: 'code', client_id: 'cli', scope: 'read', code_challenge_method: 'S256' });
    expect(asked.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(asked.searchParams.get('state')!.length).toBeGreaterThanOrEqual(22);
    const redirect = new URL(asked.searchParams.get('redirect_uri')!);
    expect(redirect.hostname).toBe('127.0.0.1');
    expect(redirect.pathname).toBe('/callback');
    expect(Number(redirect.port)).toBeGreaterThan(0);

    const seen = (await r.browser())!;
    expect(seen.status).toBe(200);
    expect(seen.page).toContain('You can close this tab');
    // The URL is printed for the user; the code never is.
    const code = seen.callback.searchParams.get('code')!;
    expect(code).toMatch(/^tcc_/);
    expect(r.notices.join('')).toContain(r.opened[0]);
    expect(r.notices.join('')).not.toContain(code);
    expect(seen.page).not.toContain(code);
    // The listener is gone once the flow is done.
    expect(await refused(Number(redirect.port))).toBe(true);
  });

  it('a confidential client authenticates at the token endpoint; with a wrong secret the server’s 401 is the error, in the browser too', async () => {
    const { s, webSecret } = await start();
    const ok = await run(s, { remote: { clientId: 'web', clientSecret: webSecret } }).result;
    expect(ok.scope).toBe('read');
    expect((await s.engine.introspectAsClient({ credentials: { clientId: 'web', secrets: [webSecret] }, token: ok.access_token })).result).toMatchObject({ active: true, client_id: 'web' });

    const bad = run(s, { remote: { clientId: 'web', clientSecret: 'not-the-secret' } });
    const err = await bad.result.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RemoteError);
    expect((err as RemoteError).status).toBe(401);
    expect((err as RemoteError).message).toMatch(/401 invalid_client/);
    const seen = (await bad.browser())!;
    expect(seen.status).toBe(400);
    expect(seen.page).toContain('The login did not complete');
  });

  it('refuses a response whose state is not this login’s, and does not exchange its code', async () => {
    const { s } = await start();
    const r = run(s, {}, { tamper: (cb) => cb.searchParams.set('state', 'someone-elses') });
    const err = await failure(r.result);
    expect(err.code).toBe('state_mismatch');
    expect(err.message).toMatch(/state/);
    const seen = (await r.browser())!;
    expect(seen.status).toBe(400);
    expect(seen.page).toContain('The login did not complete');
    // The code is still unused: exchanging it now fails only on the verifier, not as a replay.
    const exchange = await s.post('/oauth/token', { grant_type: 'authorization_code', code: seen.callback.searchParams.get('code')!, code_verifier: 'x'.repeat(43), redirect_uri: new URL(r.opened[0]!).searchParams.get('redirect_uri')!, client_id: 'cli' });
    expect(exchange.json.error_description).toMatch(/code_verifier/);
  });

  it('refuses a response from another issuer, or without iss when the server promises it (RFC 9207)', async () => {
    const { s } = await start();
    const forged = await failure(run(s, {}, { tamper: (cb) => cb.searchParams.set('iss', 'https://evil.example') }).result);
    expect(forged.code).toBe('iss_mismatch');
    expect(forged.message).toContain('"https://evil.example"');
    const missing = await failure(run(s, {}, { tamper: (cb) => cb.searchParams.delete('iss') }).result);
    expect(missing.code).toBe('iss_mismatch');
    expect(missing.message).toContain('no iss');
  });

  it('tells the error of the authorization response: Cancel on the login page is access_denied', async () => {
    const { s } = await start();
    const r = run(s, {}, { deny: true });
    const err = await failure(r.result);
    expect(err.code).toBe('authorization_error');
    expect(err.error).toEqual({ error: 'access_denied', error_description: 'The user cancelled the sign-in' });
    expect(err.message).toBe('the server refused the login: access_denied: The user cancelled the sign-in');
    expect((await r.browser())!.page).toContain('access_denied');
  });

  it('gives up after the timeout, and closes the listener', async () => {
    const { s } = await start();
    const notices: string[] = [];
    let port = 0;
    const err = await failure(
      login({
        remote: { url: s.url, clientId: 'cli' },
        port: 0,
        timeoutMs: 50,
        notice: (t) => notices.push(t),
        openUrl: async (url) => {
          port = Number(new URL(new URL(url).searchParams.get('redirect_uri')!).port);
          return false;
        },
      }),
    );
    expect(err.code).toBe('timeout');
    expect(err.message).toBe('no login within 50ms: nothing was issued');
    expect(notices.join('')).toContain('Open this URL in a browser');
    expect(notices.join('')).not.toContain('A browser was opened');
    expect(await refused(port)).toBe(true);
  });

  it('stops when aborted (Ctrl-C)', async () => {
    const { s } = await start();
    const controller = new AbortController();
    const p = login({ remote: { url: s.url, clientId: 'cli' }, port: 0, timeoutMs: 10_000, notice: () => undefined, signal: controller.signal, openUrl: async () => (setImmediate(() => controller.abort()), false) });
    expect((await failure(p)).code).toBe('interrupted');
  });

  it('refuses a server without a login, before listening or opening anything', async () => {
    const { s } = await start({ devLogin: false });
    const r = run(s);
    const err = await failure(r.result);
    expect(err.code).toBe('no_login');
    expect(err.message).toContain('no authorization_endpoint');
    expect(err.hint).toMatch(/--login-url.*--dev-login.*--demo/);
    expect(r.opened).toEqual([]);
  });

  it('refuses metadata that names another issuer (RFC 8414 §3.3), and a URL that is not a server of this kind', async () => {
    const { s } = await start();
    const other = await failure(run(s, { remote: { url: s.url.replace('127.0.0.1', 'localhost') } }).result);
    expect(other.code).toBe('issuer_mismatch');
    expect(other.hint).toBe(`use --url ${s.url}`);
    // A trailing slash is the same issuer.
    await expect(run(s, { remote: { url: `${s.url}/` } }).result).resolves.toMatchObject({ token_type: 'bearer' });
    const prefixed = await failure(run(s, { remote: { url: `${s.url}/nothing-here` } }).result);
    expect(prefixed.code).toBe('bad_metadata');
    expect(prefixed.message).toContain(`${s.url}/.well-known/oauth-authorization-server/nothing-here and ${s.url}/nothing-here/.well-known/oauth-authorization-server`);
  });

  it('a port in use is said so', async () => {
    const { s } = await start();
    const err = await failure(run(s, { port: s.port }).result);
    expect(err.code).toBe('port_unavailable');
    expect(err.message).toBe(`port ${s.port} on 127.0.0.1 is already in use`);
  });

  it('its challenge is RFC 7636’s S256 (appendix B)', () => {
    expect(s256('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk')).toBe('E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM');
  });
});

describe('tokenctl login over HTTPS', () => {
  let dir: string;
  let caFile: string;
  let ca: string;
  let tlsServer: TestServer;
  beforeAll(async () => {
    const tls = await selfSignedCertificate('127.0.0.1');
    dir = mkdtempSync(join(tmpdir(), 'tokenctl-login-tls-'));
    caFile = join(dir, 'ca.pem');
    writeFileSync(caFile, tls.cert);
    ca = tls.cert;
    tlsServer = await startTestServer({ devLogin: true, https: { key: tls.key, cert: tls.cert } });
    tlsServer.engine.config.issuer = tlsServer.url;
    await tlsServer.engine.createClient({ id: 'cli', name: 'The CLI', public: true, scope: 'read write', redirectUris: [REDIRECT] }, 'test');
  });
  afterAll(async () => {
    await tlsServer?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('trusts the server certificate given with --ca for the metadata and the token endpoint', async () => {
    const s = tlsServer;
    const tokens = await run(s, { remote: { ca: caFile } }, { fetch: fetchTrusting(ca) }).result;
    expect((await s.engine.introspectAsClient({ credentials: { clientId: 'cli', secrets: [] }, token: tokens.access_token })).result).toMatchObject({ active: true });
    const untrusted = await run(s).result.catch((e: unknown) => e);
    expect(untrusted).toBeInstanceOf(RemoteError);
    expect((untrusted as RemoteError).message).toMatch(/TLS failure.*pass --ca/);
  });
});
