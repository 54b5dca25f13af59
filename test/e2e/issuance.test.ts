import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as client from 'openid-client';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HAS_CHROMIUM, launchChromium, NO_CHROMIUM_MESSAGE, startLoopbackApp, type Chromium, type LoopbackApp } from '../browser/chromium.js';
import { BIN, ROOT, tokenctl } from '../helpers/cli.js';
import { PG_SKIP_MESSAGE, PG_URL, dropSchema, testSchemaName } from '../helpers/pg.js';
import { fetchTrusting } from '../helpers/server.js';
import { developmentTls, freePort, type Tls } from '../resource-server/serve-process.js';

/**
 * Issuance as a new user and an operator meet it, through the built binary and the real stores:
 * `serve --demo` on SQLite with an openid-client app logging in on the development page in
 * Chromium; `serve --login-url` with the example login app as a process of its own; the same on
 * two serve nodes sharing one PostgreSQL store; and a cron job's client credentials with a plain
 * fetch. Every process is killed in afterAll and every wait is bounded.
 */

const LOGIN_APP = join(ROOT, 'examples/login-app/app.mjs');
const ALICE = { username: 'alice', password: 'correct horse battery staple', subject: 'user-0001' };
const REQUEST_TIMEOUT_MS = 10_000;

let sandbox: string;
/** Every process started here, stopped at the end even when a beforeAll failed before keeping it. */
const started = new Set<Running>();
beforeAll(() => {
  sandbox = mkdtempSync(join(tmpdir(), 'tokenctl-issuance-e2e-'));
});
afterAll(async () => {
  await Promise.all([...started].map((p) => p.stop()));
  if (sandbox) rmSync(sandbox, { recursive: true, force: true });
}, 30_000);

/** A child process whose output is watched: serve, or the example login app. */
interface Running {
  output(): string;
  /** Resolves with the first match of `re` in what it printed; rejects if it exits or after `timeoutMs`. */
  waitFor(re: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** The stop signal, then SIGKILL if it has not exited within 5 s. */
  stop(): Promise<void>;
}

function run(args: string[], env: NodeJS.ProcessEnv, stopSignal: NodeJS.Signals = 'SIGTERM'): Running {
  const child: ChildProcess = spawn(process.execPath, args, { cwd: sandbox, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const listeners = new Set<() => void>();
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
  const notify = (d: string) => ((out += d), listeners.forEach((l) => l()));
  child.stdout!.setEncoding('utf8').on('data', notify);
  child.stderr!.setEncoding('utf8').on('data', notify);
  const running: Running = {
    output: () => out,
    waitFor(re, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const m = re.exec(out);
          if (m) done(() => resolve(m));
        };
        const done = (then: () => void) => {
          listeners.delete(check);
          clearTimeout(timer);
          then();
        };
        const timer = setTimeout(() => done(() => reject(new Error(`timed out waiting for ${re}:\n${out}`))), timeoutMs);
        listeners.add(check);
        void exited.then(() => done(() => reject(new Error(`exited before ${re}:\n${out}`))));
        check();
      });
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill(stopSignal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
  started.add(running);
  return running;
}

/** The environment a user's shell would give: none of the runner's TOKENCTL_* settings (serve reads every flag from one), a home of its own. */
function userEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', HOME: sandbox, XDG_DATA_HOME: join(sandbox, 'data') };
  for (const key of Object.keys(env)) if (key.startsWith('TOKENCTL_')) delete env[key];
  for (const key of ['FORCE_COLOR', 'NODE_OPTIONS']) delete env[key];
  return env;
}

/** `tokenctl serve …` and the URL it prints once it listens; `info` logs every request. */
async function serve(args: string[], logLevel: 'warn' | 'info' = 'warn'): Promise<{ proc: Running; url: string }> {
  // SIGINT stops at once; SIGTERM would first drain for --drain (5 s), which a test has no use for.
  const proc = run([BIN, 'serve', '--log-level', logLevel, ...args], userEnv(), 'SIGINT');
  const url = (await proc.waitFor(/^listening on (\S+)$/m))[1]!;
  return { proc, url };
}

/** The example login app as an operator runs it: its settings in the environment, tokenctl's certificate trusted. */
async function startLoginApp(env: { TOKENCTL_URL: string; LOGIN_CLIENT_ID: string; LOGIN_CLIENT_SECRET: string; PORT: string; NODE_EXTRA_CA_CERTS: string }): Promise<Running> {
  const proc = run([LOGIN_APP], { ...process.env, ...env });
  await proc.waitFor(/login app listening on http:\/\/127\.0\.0\.1:\d+\/login/, 15_000);
  return proc;
}

/** `tokenctl … --json` on a store, failing the test on a non-zero exit. */
async function cli<T>(db: string, args: string[]): Promise<T> {
  const r = await tokenctl([...args, '--db', db, '--json'], { timeoutMs: 20_000 });
  expect(r.code, r.stderr).toBe(0);
  return r.json<T>();
}

interface CreatedClient {
  client_id: string;
  client_secret: string | null;
  grant_types: string[];
}

interface AuditLine {
  action: string;
  actor: string;
  target: string;
  count: number;
  detail: string;
}

/** The client's lines of `tokenctl audit --json` (newest first), as an operator reads them. */
async function auditOf(db: string, clientId: string): Promise<AuditLine[]> {
  return (await cli<{ entries: AuditLine[] }>(db, ['audit', '--client', clientId])).entries;
}

/** The nine fields of the spec 2.1 token response. */
const NINE = ['access_token', 'expires_in', 'jti', 'node', 'org_id', 'refresh_token', 'scope', 'stime', 'token_type'];

/** A PKCE verifier, `state`, and the authorization URL openid-client builds with them. */
async function authorization(config: client.Configuration, redirectUri: string, scope?: string) {
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    ...(scope !== undefined && { scope }),
    state,
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  });
  return { verifier, state, url };
}

/** Waits until the browser is back at the app's redirect URI and returns that URL (the authorization response). */
async function landedAt(page: Page, redirectUri: string): Promise<URL> {
  await page.waitForURL((u) => u.href.startsWith(redirectUri));
  return new URL(page.url());
}

/** The requests a serve process logged (`--log-level info`), as "METHOD route status", in order. */
function requests(proc: Running): string[] {
  return proc
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { msg: string; method?: string; path?: string; status?: number })
    .filter((l) => l.msg === 'request')
    .map((l) => `${l.method} ${l.path} ${l.status}`);
}

/** Fills the example login app's form and presses Sign in. */
async function signInOnLoginApp(page: Page, username: string, password: string): Promise<void> {
  await page.getByLabel('User name').fill(username);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

if (!HAS_CHROMIUM) it.skip(NO_CHROMIUM_MESSAGE, () => undefined);

describe.skipIf(!HAS_CHROMIUM)('a new user: `serve --demo` on SQLite, an openid-client app, the development login in Chromium', () => {
  let demo: { proc: Running; url: string };
  let db: string;
  let ca: string;
  let demoSecret: string;
  let app: LoopbackApp;
  let browser: Chromium;

  beforeAll(async () => {
    db = join(sandbox, 'demo.db');
    demo = await serve(['--demo', '--port', '0', '--db', db]);
    const out = demo.proc.output();
    demoSecret = /^\s+client_secret\s+(\S+)$/m.exec(out)![1]!;
    ca = readFileSync(/certificate is (\S+\.pem)/.exec(out)![1]!, 'utf8');
    app = await startLoopbackApp();
    browser = await launchChromium({ ignoreHTTPSErrors: true });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await demo?.proc.stop();
  }, 30_000);

  it('prints what an app needs: the issuer, the public client demo-app, a loopback redirect URI', () => {
    const out = demo.proc.output();
    expect(demo.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(out).toContain(`#   issuer:     ${demo.url} (RFC 8414 metadata at /.well-known/oauth-authorization-server)`);
    expect(out).toContain('#   client_id:  demo-app (public), redirect URI http://127.0.0.1:<any port>/callback');
  });

  it('logs in as anyone, and the tokens refresh, introspect (as demo-client) and revoke; the audit says grant.authorize', async () => {
    const trusting = fetchTrusting(ca);
    const config = await client.discovery(new URL(demo.url), 'demo-app', undefined, client.None(), { algorithm: 'oauth2', [client.customFetch]: trusting });
    expect(config.serverMetadata()).toMatchObject({ issuer: demo.url, authorization_endpoint: `${demo.url}/oauth/authorize`, code_challenge_methods_supported: ['S256'] });
    const resourceServer = await client.discovery(new URL(demo.url), 'demo-client', demoSecret, undefined, { algorithm: 'oauth2', [client.customFetch]: trusting });

    const redirectUri = `${app.url}/callback`;
    const { verifier, state, url } = await authorization(config, redirectUri, 'read');
    const page = browser.page;
    await page.goto(url.href);
    await expect(page.locator('h1').textContent()).resolves.toBe('Sign in to tokenctl demo app');
    await page.locator('#username').fill('ada');
    await page.keyboard.press('Enter');
    const callback = await landedAt(page, redirectUri);
    expect(callback.searchParams.get('iss')).toBe(demo.url);
    expect(app.callbacks).toHaveLength(1);

    const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
    expect(Object.keys(tokens).sort()).toEqual(NINE);
    expect(tokens).toMatchObject({ token_type: 'bearer', scope: 'read', org_id: 'demo-org', expires_in: 3600 });

    expect(await client.tokenIntrospection(resourceServer, tokens.access_token)).toMatchObject({ active: true, sub: 'ada', username: 'ada', client_id: 'demo-app', scope: 'read', iss: demo.url, aud: 'https://api.example.test' });

    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.access_token).not.toBe(tokens.access_token);
    expect(await client.tokenIntrospection(resourceServer, refreshed.access_token)).toMatchObject({ active: true, username: 'ada', client_id: 'demo-app' });

    await client.tokenRevocation(config, refreshed.refresh_token!);
    expect(await client.tokenIntrospection(resourceServer, refreshed.access_token)).toEqual({ active: false });
    expect(await client.tokenIntrospection(resourceServer, tokens.access_token)).toEqual({ active: false });

    // The code was spent; presented again it is refused, and the store audits the replay.
    const again = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state }).catch((e: unknown) => e);
    expect((again as client.ResponseBodyError).error).toBe('invalid_grant');

    const audit = await auditOf(db, 'demo-app');
    expect(audit.find((a) => a.action === 'grant.authorize')).toMatchObject({ actor: 'demo-app', count: 2, detail: 'user ada; scope read' });
    // The grant had ended already (revoked above): the replay is told, with nothing left to revoke.
    expect(audit.find((a) => a.action === 'grant.code_replayed')).toMatchObject({ actor: 'demo-app', count: 0 });
  });
});

describe.skipIf(!HAS_CHROMIUM)('an operator: `serve --login-url` with the example login app, on SQLite', () => {
  let db: string;
  let node: { proc: Running; url: string };
  let login: Running;
  let loginUrl: string;
  let appClient: CreatedClient;
  let app: LoopbackApp;
  let browser: Chromium;
  let ca: string;

  beforeAll(async () => {
    db = join(sandbox, 'operator.db');
    const provider = await cli<CreatedClient>(db, ['client', 'create', '--name', 'login', '--login-provider']);
    appClient = await cli<CreatedClient>(db, ['client', 'create', '--name', 'notes', '--public', '--scope', 'notes:read notes:write', '--redirect-uri', 'http://127.0.0.1/callback']);
    expect(appClient.grant_types.sort()).toEqual(['authorization_code', 'refresh_token']);
    // Another site than tokenctl's (localhost, not 127.0.0.1), as a real login app is.
    const loginPort = await freePort();
    loginUrl = `http://localhost:${loginPort}/login`;
    node = await serve(['--db', db, '--port', '0', '--tls-self-signed', '--login-url', loginUrl]);
    const certFile = /^certificate: (\S+\.pem) /m.exec(node.proc.output())![1]!;
    ca = readFileSync(certFile, 'utf8');
    login = await startLoginApp({ TOKENCTL_URL: node.url, LOGIN_CLIENT_ID: provider.client_id, LOGIN_CLIENT_SECRET: provider.client_secret!, PORT: String(loginPort), NODE_EXTRA_CA_CERTS: certFile });
    app = await startLoopbackApp();
    browser = await launchChromium({ ignoreHTTPSErrors: true });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await login?.stop();
    await node?.proc.stop();
  }, 30_000);

  it('a wrong password stays on the form; the right one gives alice tokens that refresh, introspect and revoke', async () => {
    const config = await client.discovery(new URL(node.url), appClient.client_id, undefined, client.None(), { algorithm: 'oauth2', [client.customFetch]: fetchTrusting(ca) });
    const redirectUri = `${app.url}/callback`;
    const { verifier, state, url } = await authorization(config, redirectUri, 'notes:read');
    const page = browser.page;
    await page.goto(url.href);
    expect(page.url().startsWith(`${loginUrl}?login_challenge=`)).toBe(true);
    await expect(page.locator('h1').textContent()).resolves.toBe('Sign in to notes');

    const refused = page.waitForResponse((r) => r.url() === loginUrl && r.request().method() === 'POST');
    await signInOnLoginApp(page, ALICE.username, 'not the password');
    expect((await refused).status()).toBe(401);
    await expect(page.locator('#error').textContent()).resolves.toBe('Wrong user name or password.');
    expect(page.url()).toBe(loginUrl);
    expect(app.callbacks).toEqual([]);

    await signInOnLoginApp(page, ALICE.username, ALICE.password);
    const callback = await landedAt(page, redirectUri);
    expect(callback.searchParams.get('state')).toBe(state);
    const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
    expect(Object.keys(tokens).sort()).toEqual(NINE);
    expect(await client.tokenIntrospection(config, tokens.access_token)).toMatchObject({ active: true, sub: ALICE.subject, username: ALICE.username, client_id: appClient.client_id, scope: 'notes:read', iss: node.url });

    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
    expect(await client.tokenIntrospection(config, refreshed.access_token)).toMatchObject({ active: true, sub: ALICE.subject });
    await client.tokenRevocation(config, tokens.refresh_token!);
    expect(await client.tokenIntrospection(config, refreshed.access_token)).toEqual({ active: false });

    const audit = await auditOf(db, appClient.client_id);
    expect(audit.map((a) => a.action)).toContain('grant.authorize');
  });
});

if (!PG_URL) {
  console.warn(PG_SKIP_MESSAGE);
  it.skip(`two serve nodes on one PostgreSQL store: ${PG_SKIP_MESSAGE}`, () => undefined);
}

describe.skipIf(!HAS_CHROMIUM || !PG_URL)('two serve nodes on one PostgreSQL store: a login that crosses them', () => {
  const schema = testSchemaName();
  let db: string;
  let tls: Tls;
  let a: { proc: Running; url: string };
  let b: { proc: Running; url: string };
  let login: Running;
  let loginUrl: string;
  let appClient: CreatedClient;
  let app: LoopbackApp;
  let browser: Chromium;

  beforeAll(async () => {
    db = `${PG_URL}${PG_URL!.includes('?') ? '&' : '?'}schema=${schema}`;
    tls = await developmentTls();
    // The clients first: creating one also creates the schema, before two nodes race to.
    const provider = await cli<CreatedClient>(db, ['client', 'create', '--name', 'login', '--login-provider']);
    appClient = await cli<CreatedClient>(db, ['client', 'create', '--name', 'notes', '--public', '--scope', 'notes:read', '--redirect-uri', 'http://127.0.0.1/callback']);
    const [portA, portB, loginPort] = [await freePort(), await freePort(), await freePort()];
    loginUrl = `http://localhost:${loginPort}/login`;
    // One issuer for both, as behind a load balancer; B's address stands for it.
    const issuer = `https://127.0.0.1:${portB}`;
    const common = ['--db', db, '--tls-cert', tls.certFile, '--tls-key', tls.keyFile, '--issuer', issuer, '--login-url', loginUrl];
    [a, b] = await Promise.all([serve([...common, '--port', String(portA), '--node', 'node-a'], 'info'), serve([...common, '--port', String(portB), '--node', 'node-b'], 'info')]);
    login = await startLoginApp({ TOKENCTL_URL: b.url, LOGIN_CLIENT_ID: provider.client_id, LOGIN_CLIENT_SECRET: provider.client_secret!, PORT: String(loginPort), NODE_EXTRA_CA_CERTS: tls.certFile });
    app = await startLoopbackApp();
    browser = await launchChromium({ ignoreHTTPSErrors: true });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await login?.stop();
    await Promise.all([a?.proc.stop(), b?.proc.stop()]);
    if (PG_URL) await dropSchema(PG_URL, schema);
    if (tls) rmSync(join(tls.certFile, '..'), { recursive: true, force: true });
  }, 30_000);

  it('authorize on A, the back channel and the return on B, the code exchanged on A', async () => {
    expect(b.url).toBe(`https://127.0.0.1:${new URL(b.url).port}`);
    // The app's requests go where `route` says, as a load balancer in front of both nodes would send them.
    let route = b.url;
    const trusting = fetchTrusting(tls.ca);
    const balanced = ((input: string | URL | Request, init?: RequestInit) => {
      const to = new URL(input instanceof Request ? input.url : input);
      const target = new URL(route);
      to.host = target.host;
      return trusting(to, init);
    }) as typeof fetch;
    const config = await client.discovery(new URL(b.url), appClient.client_id, undefined, client.None(), { algorithm: 'oauth2', [client.customFetch]: balanced });
    const redirectUri = `${app.url}/callback`;
    const { verifier, state, url } = await authorization(config, redirectUri);
    const onA = new URL(url);
    onA.host = new URL(a.url).host;

    const page = browser.page;
    const continued: string[] = [];
    page.on('request', (r) => {
      if (r.url().includes('/oauth/authorize/continue')) continued.push(r.url());
    });
    await page.goto(onA.href);
    expect(page.url().startsWith(`${loginUrl}?login_challenge=`)).toBe(true);
    await signInOnLoginApp(page, ALICE.username, ALICE.password);
    const callback = await landedAt(page, redirectUri);
    expect(continued.map((u) => new URL(u).origin)).toEqual([b.url]);
    expect(callback.searchParams.get('iss')).toBe(b.url);

    route = a.url;
    const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
    expect(tokens).toMatchObject({ node: 'node-a', scope: 'notes:read' });
    // Each node's request log: what it answered, by route (the login's steps never met in one process).
    // A line is written once its answer has gone, so the exchange's may still be on its way.
    await a.proc.waitFor(/"path":"\/oauth\/token","status":200/, 5_000);
    await b.proc.waitFor(/"path":"\/oauth\/authorize\/continue","status":302/, 5_000);
    expect(requests(a.proc)).toEqual(['GET /oauth/authorize 302', 'POST /oauth/token 200']);
    expect(requests(b.proc)).toEqual([
      'GET /.well-known/oauth-authorization-server 200',
      'GET /oauth/login-requests/:challenge 200',
      'GET /oauth/login-requests/:challenge 200',
      'POST /oauth/login-requests/:challenge/accept 200',
      'GET /oauth/authorize/continue 302',
    ]);

    route = b.url;
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed).toMatchObject({ node: 'node-b' });
    route = a.url;
    expect(await client.tokenIntrospection(config, refreshed.access_token)).toMatchObject({ active: true, sub: ALICE.subject, username: ALICE.username });
    route = b.url;
    await client.tokenRevocation(config, tokens.refresh_token!);
    route = a.url;
    expect(await client.tokenIntrospection(config, refreshed.access_token)).toEqual({ active: false });

    // The code presented again, on the other node: the store knows it was spent.
    route = b.url;
    const again = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state }).catch((e: unknown) => e);
    expect((again as client.ResponseBodyError).error).toBe('invalid_grant');

    const audit = await auditOf(db, appClient.client_id);
    expect(audit.find((x) => x.action === 'grant.authorize')).toMatchObject({ count: 2, detail: `user ${ALICE.username}; scope notes:read` });
    expect(audit.find((x) => x.action === 'grant.code_replayed')).toMatchObject({ count: 0 });
  });
});

describe('a cron job: client credentials against a real serve, with a plain fetch', () => {
  let db: string;
  let node: { proc: Running; url: string };

  beforeAll(async () => {
    db = join(sandbox, 'cron.db');
    // Plain HTTP on loopback, so the job's fetch is the global one; the client is added while serve runs.
    await cli<CreatedClient>(db, ['client', 'create', '--name', 'bootstrap']);
    node = await serve(['--db', db, '--port', '0']);
  }, 60_000);
  afterAll(() => node?.proc.stop(), 30_000);

  it('gets an access token (no refresh token) with HTTP Basic; it introspects active with sub = the client id', async () => {
    expect(node.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const cron = await cli<CreatedClient>(db, ['client', 'create', '--name', 'nightly-report', '--grant-type', 'client_credentials', '--scope', 'reports']);
    expect(cron.grant_types).toEqual(['client_credentials']);
    const basic = 'Basic ' + Buffer.from(`${encodeURIComponent(cron.client_id)}:${encodeURIComponent(cron.client_secret!)}`).toString('base64');
    const post = async (path: string, form: Record<string, string>) => {
      const res = await fetch(`${node.url}${path}`, {
        method: 'POST',
        headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(form),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };

    const token = await post('/oauth/token', { grant_type: 'client_credentials' });
    expect(token.status, JSON.stringify(token.body)).toBe(200);
    expect(token.body).toMatchObject({ token_type: 'bearer', scope: 'reports', expires_in: 3600 });
    expect(token.body.access_token).toMatch(/^tca_/);
    expect(token.body).not.toHaveProperty('refresh_token');

    const intro = await post('/oauth/introspection', { token: token.body.access_token as string });
    expect(intro.status).toBe(200);
    expect(intro.body).toMatchObject({ active: true, sub: cron.client_id, username: cron.client_id, client_id: cron.client_id, scope: 'reports' });

    // A grant the client lacks is refused, as the contract says.
    const refresh = await post('/oauth/token', { grant_type: 'refresh_token', refresh_token: 'tcr_x' });
    expect(refresh.status).toBe(400);
    expect(refresh.body.error).toBe('unauthorized_client');
  });
});
