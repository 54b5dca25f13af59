import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ResourceServer } from '../../src/resource-server/index.js';
import { createClient, issue, issueInThePast, rotateInThePast, ROOT, sleep, tempStore, type IssuedTokens, type TempStore } from '../helpers/cli.js';
import { ROTATION_RACE_WINDOW_MS } from '../../src/engine/context.js';
import { fetchTrusting } from '../helpers/server.js';
import { developmentTls, freePort, startServe, type ServeProcess, type Tls } from './serve-process.js';

/**
 * The module against real `serve` processes (two nodes on one SQLite store, HTTPS with a
 * development certificate), its cache 10 minutes long: a cached token is refused within 1 s of
 * its revocation whichever node or CLI process revoked it, for every revocation kind, and across
 * a kill -9 of the node it polls.
 */
const CACHE_MS = 10 * 60_000;
let store: TempStore;
let tls: Tls;
let nodeA: ServeProcess;
let nodeB: ServeProcess;
let rs: ResourceServer;
let httpsFetch: typeof fetch;
const errors: Error[] = [];

beforeAll(async () => {
  store = tempStore();
  tls = await developmentTls();
  httpsFetch = fetchTrusting(tls.ca);
  const rsClient = await createClient(store);
  await store.json(['receiver', 'add', 'rs-poll', '--poll', '--client', rsClient.id, '--audience', 'rs']);
  const [portA, portB] = [await freePort(), await freePort()];
  const issuer = `https://127.0.0.1:${portA}`;
  nodeA = startServe(store.db, tls, portA, ['--issuer', issuer, '--rotate-refresh-tokens', '--node', 'a']);
  nodeB = startServe(store.db, tls, portB, ['--issuer', issuer, '--rotate-refresh-tokens', '--node', 'b']);
  await Promise.all([nodeA.up, nodeB.up]);
  rs = new ResourceServer({ url: nodeA.url, ca: tls.ca, clientId: rsClient.id, clientSecret: rsClient.secret!, audience: 'rs', accept: { audience: 'rs' }, cache: { maxAgeMs: CACHE_MS }, onError: (e) => errors.push(e) });
  await rs.ready();
}, 90_000);

afterAll(async () => {
  await rs?.close();
  await Promise.all([nodeA?.stop(), nodeB?.stop()]);
  store?.cleanup();
});

const basic = (c: { id: string; secret: string | null }) => 'Basic ' + Buffer.from(`${c.id}:${c.secret}`).toString('base64');
async function post(node: ServeProcess, path: string, form: Record<string, string>, client: { id: string; secret: string | null }): Promise<Response> {
  return httpsFetch(node.url + path, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(client) }, body: new URLSearchParams(form).toString() });
}

/** Polls the module until it refuses `token`; returns how long that took. */
async function refusedWithin(token: string, ms: number): Promise<number> {
  const start = Date.now();
  for (;;) {
    const principal = await rs.verify(token).catch(() => 'unavailable' as const);
    if (principal === null) return Date.now() - start;
    if (Date.now() - start > ms) throw new Error(`still ${principal === 'unavailable' ? 'unavailable' : 'accepted'} after ${ms} ms`);
    await sleep(10);
  }
}

/** Until the module has seen the node it polls go (its long poll cut, or the next one refused): it is in its fallback. */
async function streamDown(): Promise<void> {
  await expect.poll(() => rs.stats().streamUp, { timeout: 5000, interval: 10 }).toBe(false);
}

type Client = { id: string; secret: string | null };
const kinds: [string, (c: Client, t: IssuedTokens) => Promise<void>][] = [
  ['its client, over HTTP on the other node', async (c, t) => void expect((await post(nodeB, '/oauth/revocation', { token: t.access_token }, c)).status).toBe(200)],
  ['its refresh token (the grant), over HTTP on the other node', async (c, t) => void expect((await post(nodeB, '/oauth/revocation', { token: t.refresh_token }, c)).status).toBe(200)],
  ['the CLI: revoke TOKEN', async (_c, t) => void (await store.json(['revoke', t.access_token]))],
  ['the CLI: revoke --jti', async (_c, t) => void (await store.json(['revoke', '--jti', t.jti, '--yes']))],
  ['the CLI: revoke --user', async () => void (await store.json(['revoke', '--user', 'alice', '--yes']))],
  ['the CLI: revoke --client', async (c) => void (await store.json(['revoke', '--client', c.id, '--yes']))],
  ['the CLI: client delete', async (c) => void (await store.json(['client', 'delete', c.id, '--yes']))],
  [
    'reuse detection (a replaced refresh token presented again, on the other node)',
    async (c, t) => {
      // Replaced that long ago: past the rotation race window, so reuse, not a lost race.
      await rotateInThePast(store, t.refresh_token, ROTATION_RACE_WINDOW_MS + 1_000);
      expect((await post(nodeB, '/oauth/token', { grant_type: 'refresh_token', refresh_token: t.refresh_token }, c)).status).toBe(401); // reuse: the grant is revoked
    },
  ],
];

describe('resource server module against real serve processes', () => {
  it('serves a valid token from its cache without a round trip', async () => {
    const app = await createClient(store, ['--audience', 'rs']);
    const t = await issue(store, app.id, 'carol');
    const before = rs.stats().introspections;
    for (let i = 0; i < 50; i++) expect(await rs.verify(t.access_token)).toMatchObject({ username: 'carol', clientId: app.id });
    expect(rs.stats().introspections - before).toBe(1);
  });

  it.each(kinds)('refuses a cached token within 1 s of its revocation by %s', async (_kind, revoke) => {
    const app = await createClient(store, ['--audience', 'rs']);
    // Issued before the rotation that reuse detection rotates in the past.
    const t = await issueInThePast(store, app.id, 'alice', 2 * ROTATION_RACE_WINDOW_MS + 1_000);
    expect(await rs.verify(t.access_token)).not.toBeNull();
    await revoke(app, t);
    const ms = await refusedWithin(t.access_token, 1000);
    expect(ms).toBeLessThan(1000);
  }, 30_000);

  it('refuses within 1 s across a kill -9 of the node it polls (revoked on the other node, then the kill)', async () => {
    const app = await createClient(store, ['--audience', 'rs']);
    const [t1, t2] = [await issue(store, app.id, 'dave'), await issue(store, app.id, 'erin')];
    const principals = [await rs.verify(t1.access_token), await rs.verify(t2.access_token)];
    expect(principals.every((p) => p !== null)).toBe(true);
    // t1 revoked and node A killed at once: its event may or may not get out before the kill.
    const revoked = await post(nodeB, '/oauth/revocation', { token: t1.access_token }, app);
    expect(revoked.status).toBe(200);
    const revokedAt = Date.now();
    await nodeA.kill9();
    // t2 revoked while node A is down: its event waits in the outbox.
    expect((await post(nodeB, '/oauth/revocation', { token: t2.access_token }, app)).status).toBe(200);
    await streamDown();
    nodeA = startServe(store.db, tls, nodeA.port, ['--issuer', `https://127.0.0.1:${nodeA.port}`, '--rotate-refresh-tokens', '--node', 'a']);
    await nodeA.up;
    const upAt = Date.now();
    // While A was down, the module fell back (no answer older than 2 s trusted): refused within 1 s of A being up,
    // or within 1 s of the revocation when the event got out first.
    for (const t of [t1, t2]) await refusedWithin(t.access_token, 1000);
    expect(Date.now() - upAt < 1000 || Date.now() - revokedAt < 1000).toBe(true);
    await rs.ready();
    expect(rs.stats().streamUp).toBe(true);
    // And the backlog arrived: both events applied, acknowledged.
    await expect.poll(async () => (await store.json<{ id: string; pending: number }[]>(['receiver', 'list'])).find((r) => r.id === 'rs-poll')?.pending, { timeout: 5000 }).toBe(0);
  }, 60_000);

  it('refuses within 1 s across a kill -9 of the node it polls right after a CLI revocation', async () => {
    const app = await createClient(store, ['--audience', 'rs']);
    const t = await issue(store, app.id, 'gina');
    expect(await rs.verify(t.access_token)).not.toBeNull();
    await store.json(['revoke', t.access_token]);
    const revokedAt = Date.now();
    await nodeA.kill9(); // the event may or may not have reached the module
    await streamDown();
    nodeA = startServe(store.db, tls, nodeA.port, ['--issuer', `https://127.0.0.1:${nodeA.port}`, '--rotate-refresh-tokens', '--node', 'a']);
    await nodeA.up;
    const upAt = Date.now();
    await refusedWithin(t.access_token, 1000);
    expect(Date.now() - upAt < 1000 || Date.now() - revokedAt < 1000).toBe(true);
    await rs.ready();
  }, 60_000);

  it('the ten lines of the docs (examples/node-http/api.mjs) protect an API', async () => {
    const apiClient = await createClient(store);
    await store.json(['receiver', 'add', 'example-api', '--poll', '--client', apiClient.id]);
    const port = await freePort();
    const api = spawn(process.execPath, [join(ROOT, 'examples/node-http/api.mjs')], {
      env: { ...process.env, TOKENCTL_URL: nodeA.url, RS_CLIENT_ID: apiClient.id, RS_CLIENT_SECRET: apiClient.secret!, TOKENCTL_CA: tls.certFile, RS_AUDIENCE: 'example-api', PORT: String(port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      await new Promise<void>((resolve, reject) => {
        let out = '';
        const timer = setTimeout(() => reject(new Error(`api did not start: ${out}`)), 15_000);
        const on = (d: Buffer) => ((out += d), /api listening/.test(out) && (clearTimeout(timer), resolve()));
        api.stdout!.on('data', on);
        api.stderr!.on('data', on);
      });
      // A client whose tokens are meant for this API: the example checks their aud (RS_AUDIENCE).
      const app = await createClient(store, ['--audience', 'example-api']);
      const t = await issue(store, app.id, 'frank');
      const get = (token?: string) => fetch(`http://127.0.0.1:${port}/`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
      const ok = await get(t.access_token);
      expect([ok.status, await ok.text()]).toEqual([200, 'hello frank']);
      expect((await get()).headers.get('www-authenticate')).toBe('Bearer');
      await store.json(['revoke', t.access_token]);
      const start = Date.now();
      while ((await get(t.access_token)).status !== 401) {
        expect(Date.now() - start).toBeLessThan(1000);
        await sleep(10);
      }
    } finally {
      api.kill('SIGTERM');
    }
  }, 60_000);

  it('reported no stream error but the kill', () => {
    expect(errors.filter((e) => !/poll|ECONNRE|socket hang up|EPIPE|introspection failed/i.test(e.message))).toEqual([]);
  });
});
