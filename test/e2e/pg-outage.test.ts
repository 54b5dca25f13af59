import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, tokenctl } from '../helpers/cli.js';
import { startServe, stopServe } from '../helpers/load.js';
import { PG_SKIP_MESSAGE, PG_URL, TcpProxy, dropSchema, testSchemaName } from '../helpers/pg.js';

/**
 * `tokenctl serve` on PostgreSQL when the database goes away: every endpoint answers 503 with
 * the endpoint's own error record (never a hang, never a 500 or a stack trace, never
 * `active: true` from memory), /healthz says so, and service resumes by itself when the
 * database is back. Only this server loses the database: it reaches PostgreSQL through a TCP
 * proxy the test stops and restarts; the machine's PostgreSQL is never touched.
 */

if (!PG_URL) {
  console.warn(PG_SKIP_MESSAGE);
  it.skip(PG_SKIP_MESSAGE, () => undefined);
}

const REQUEST_TIMEOUT_MS = 15_000;
/** The store gives up on a connection after 3 s: an unavailable answer well within this. */
const ANSWER_WITHIN_MS = 8_000;

interface ServeNode {
  url: string;
  child: ChildProcess;
  output(): string;
  stop(): Promise<void>;
}

/** `tokenctl serve` on 127.0.0.1, a free port, plain HTTP (loopback), on `db`. */
async function startNode(db: string, extra: string[] = []): Promise<ServeNode> {
  const serve = await startServe(['--db', db, '--node', 'node-p', '--log-level', 'warn', ...extra]);
  return { url: serve.url, child: serve.child, output: () => serve.stdout() + serve.stderr(), stop: () => stopServe(serve) };
}

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  body: Record<string, unknown>;
  elapsedMs: number;
}

async function request(url: string, init: RequestInit = {}): Promise<Answer> {
  const started = Date.now();
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  const text = await res.text();
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    /* asserted by the caller */
  }
  return { status: res.status, headers: res.headers, text, body, elapsedMs: Date.now() - started };
}

const post = (base: string, path: string, form: Record<string, string>, headers: Record<string, string> = {}) =>
  request(base + path, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: new URLSearchParams(form).toString() });

interface Client {
  client_id: string;
  client_secret: string;
}

interface Issued {
  access_token: string;
  refresh_token: string;
}

/** Spec part 5 scenario I: `Basic base64(client_id ":" base64(password))`. */
const specBasic = (c: Client) => 'Basic ' + Buffer.from(`${c.client_id}:${Buffer.from(c.client_secret).toString('base64')}`).toString('base64');

/** Nothing of the inside may leak into an answer: no stack, no driver error, no database address. */
function expectNoInternals(a: Answer): void {
  expect(a.text).not.toMatch(/\n\s+at |ECONNREFUSED|ECONNRESET|timeout exceeded|127\.0\.0\.1|postgres|stack/i);
}

/** Spec 7.2's record, as contract 3 keeps it for every error of these endpoints. */
function expectUnavailableRecord(a: Answer, path: string): void {
  expect(a.status, a.text).toBe(503);
  expect(Object.keys(a.body).sort()).toEqual(['error', 'message', 'path', 'status', 'timestamp']);
  expect(a.body).toMatchObject({ status: 503, error: 'Service Unavailable', path });
  expect(a.body.timestamp).toMatch(/^\d{13}$/);
  expect(a.body.message).toMatch(/store/i);
  expect(a.body).not.toHaveProperty('active');
  expect(a.elapsedMs).toBeLessThan(ANSWER_WITHIN_MS);
  expectNoInternals(a);
}

describe.skipIf(!PG_URL)('serve while its PostgreSQL is unreachable', () => {
  const schema = testSchemaName();
  const pg = new URL(PG_URL ?? 'postgres://127.0.0.1:5432/none');
  const proxy = new TcpProxy(pg.hostname || '127.0.0.1', Number(pg.port || 5432));
  const direct = `${PG_URL}${PG_URL?.includes('?') ? '&' : '?'}schema=${schema}`;
  let home: string;
  let node: ServeNode;
  let client: Client;
  let kept: Issued; // revoked directly in the database during the outage
  let used: Issued; // refreshed before, during and after

  const cli = async <T>(args: string[]): Promise<T> => {
    const r = await tokenctl([...args, '--db', direct, '--json'], { timeoutMs: 20_000 });
    expect(r.code, r.stderr).toBe(0);
    return r.json<T>();
  };
  const introspect = (token: string) => post(node.url, '/oauth/introspection', { token, token_type_hint: 'access_token', client_id: client.client_id, client_secret: client.client_secret });
  const revoke = (token: string) => post(node.url, '/oauth/revocation', { token, token_type_hint: 'refresh_token', client_id: client.client_id, client_secret: client.client_secret });
  const refresh = (token: string) => post(node.url, '/oauth/token', { grant_type: 'refresh_token', refresh_token: token }, { authorization: specBasic(client) });
  const health = () => request(node.url + '/healthz');

  beforeAll(async () => {
    home = mkdtempSync(join(tmpdir(), 'tokenctl-outage-'));
    await proxy.start();
    client = await cli<Client>(['client', 'create', '--name', 'shop']);
    kept = await cli<Issued>(['token', 'issue', '--client', client.client_id, '--user', 'alice']);
    used = await cli<Issued>(['token', 'issue', '--client', client.client_id, '--user', 'bob']);
    // Only this server goes through the proxy; the CLI above and below reaches the database directly.
    node = await startNode(proxy.rewrite(direct));
  }, 60_000);

  afterAll(async () => {
    await node?.stop();
    await proxy.stop();
    if (PG_URL) await dropSchema(PG_URL, schema);
    rmSync(home, { recursive: true, force: true });
  }, 30_000);

  it('answers normally while the database is there', async () => {
    expect((await health()).status).toBe(200);
    expect((await introspect(kept.access_token)).body).toMatchObject({ active: true });
    expect((await refresh(used.refresh_token)).status).toBe(200);
  });

  it('database gone: every endpoint answers 503 with a clear record, at once, and never active=true', async () => {
    await proxy.stop();

    const h = await health();
    expectUnavailableRecord(h, '/healthz');
    expect(h.headers.get('retry-after')).toMatch(/^\d+$/);

    // The token was active a moment ago; now the server cannot know, and must not say it is.
    expectUnavailableRecord(await introspect(kept.access_token), '/oauth/introspection');
    expectUnavailableRecord(await revoke(used.refresh_token), '/oauth/revocation');

    const t = await refresh(used.refresh_token);
    expect(t.status, t.text).toBe(503);
    expect(t.body).toEqual({ error: 'temporarily_unavailable', error_description: expect.stringMatching(/store/i) });
    expect(t.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(t.headers.get('cache-control')).toBe('no-store');
    expect(t.elapsedMs).toBeLessThan(ANSWER_WITHIN_MS);
    expectNoInternals(t);

    // Meanwhile an operator revokes a token in the database directly: the server has not seen it.
    await cli(['revoke', kept.refresh_token]);
    expectUnavailableRecord(await introspect(kept.access_token), '/oauth/introspection');

    // A burst neither hangs nor piles up.
    const burst = await Promise.all(Array.from({ length: 20 }, () => introspect(kept.access_token)));
    for (const a of burst) expectUnavailableRecord(a, '/oauth/introspection');
    expect(node.child.exitCode).toBeNull();
  }, 60_000);

  it('database back: service resumes by itself, and what changed meanwhile counts at once', async () => {
    await proxy.start(); // same port
    const deadline = Date.now() + 20_000;
    let h = await health();
    while (h.status !== 200 && Date.now() < deadline) {
      await sleep(200);
      h = await health();
    }
    expect(h.status, h.text).toBe(200);
    // The revocation made during the outage holds on the first answer.
    expect((await introspect(kept.access_token)).body).toEqual({ active: false });
    const r = await refresh(used.refresh_token);
    expect(r.status, r.text).toBe(200);
    expect((await introspect(r.body.access_token as string)).body).toMatchObject({ active: true, username: 'bob' });
    expect(node.child.exitCode).toBeNull();
  }, 60_000);

  it('a database that accepts connections but never answers: 503 after the connection timeout, not a hang', async () => {
    // Idle connections are cut, and the proxy's port answers TCP but never speaks PostgreSQL.
    await proxy.stop();
    const sockets = new Set<net.Socket>();
    const silent = net.createServer((s) => {
      sockets.add(s);
      s.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => silent.listen(proxy.port, '127.0.0.1', () => resolve()));
    try {
      expectUnavailableRecord(await introspect(used.access_token), '/oauth/introspection');
      expectUnavailableRecord(await health(), '/healthz');
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
    await proxy.start();
    const deadline = Date.now() + 20_000;
    let h = await health();
    while (h.status !== 200 && Date.now() < deadline) {
      await sleep(200);
      h = await health();
    }
    expect(h.status, h.text).toBe(200);
  }, 60_000);

  it('survived every outage without crashing or an unhandled error', () => {
    expect(node.child.exitCode).toBeNull();
    expect(node.output()).not.toMatch(/unhandled|uncaught/i);
  });
});

/**
 * A proxy that can freeze: the connections stay open but no byte passes either way until
 * thawed (then what was held back is delivered, as TCP retransmission would): a database host
 * behind a network partition that drops packets, with no RST and no FIN. TcpProxy
 * (test/helpers/pg.ts) can only cut connections, which the pool notices at once.
 */
class FreezableProxy {
  private readonly server: net.Server;
  private readonly sockets = new Set<net.Socket>();
  private held: (() => void)[] = [];
  private frozen = false;
  port = 0;

  constructor(targetHost: string, targetPort: number) {
    this.server = net.createServer((client) => {
      const upstream = net.connect(targetPort, targetHost);
      for (const [from, to] of [[client, upstream], [upstream, client]] as const) {
        this.sockets.add(from);
        from.on('data', (d: Buffer) => {
          if (this.frozen) this.held.push(() => to.write(d));
          else to.write(d);
        });
        from.on('error', () => to.destroy());
        from.on('close', () => {
          this.sockets.delete(from);
          to.destroy();
        });
      }
    });
  }

  freeze(): void {
    this.frozen = true;
  }

  thaw(): void {
    this.frozen = false;
    for (const deliver of this.held.splice(0)) deliver();
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', () => resolve()));
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

describe.skipIf(!PG_URL)('serve while its PostgreSQL stops answering on open connections', () => {
  const schema = testSchemaName();
  const pg = new URL(PG_URL ?? 'postgres://127.0.0.1:5432/none');
  const proxy = new FreezableProxy(pg.hostname || '127.0.0.1', Number(pg.port || 5432));
  let home: string;
  let node: ServeNode;

  beforeAll(async () => {
    home = mkdtempSync(join(tmpdir(), 'tokenctl-outage-'));
    await proxy.start();
    const u = new URL(`${PG_URL}${PG_URL?.includes('?') ? '&' : '?'}schema=${schema}`);
    u.hostname = '127.0.0.1';
    u.port = String(proxy.port);
    node = await startNode(u.toString());
  }, 60_000);

  afterAll(async () => {
    proxy.thaw();
    await node?.stop();
    await proxy.close();
    if (PG_URL) await dropSchema(PG_URL, schema);
    rmSync(home, { recursive: true, force: true });
  }, 30_000);

  // serve bounds a request's wait on the database (--db-timeout, 5 s by default; the client side
  // gives up 1 s after the server would have), so a frozen database is a 503 within seconds.
  it('a frozen database: /healthz answers 503 within seconds, not after 35 s', async () => {
    expect((await request(node.url + '/healthz')).status).toBe(200); // the pool holds open connections now
    proxy.freeze();
    try {
      const started = Date.now();
      const res = await fetch(node.url + '/healthz', { signal: AbortSignal.timeout(ANSWER_WITHIN_MS) });
      expect(res.status).toBe(503);
      expect(Date.now() - started).toBeLessThan(ANSWER_WITHIN_MS);
    } finally {
      proxy.thaw();
    }
  }, 30_000);

  it('after a freeze, service resumes by itself', async () => {
    const deadline = Date.now() + 45_000;
    let status = 0;
    while (status !== 200 && Date.now() < deadline) {
      status = (await request(node.url + '/healthz').catch(() => ({ status: 0 }))).status;
      if (status !== 200) await sleep(250);
    }
    expect(status).toBe(200);
    expect(node.child.exitCode).toBeNull();
  }, 60_000);
});

describe.skipIf(!PG_URL)('serve started while its PostgreSQL is unreachable', () => {
  it('exits at once with a clear message instead of waiting', async () => {
    const home = mkdtempSync(join(tmpdir(), 'tokenctl-outage-'));
    const proxy = new TcpProxy('127.0.0.1', 1);
    await proxy.start();
    const port = proxy.port;
    await proxy.stop(); // a port nobody listens on
    try {
      const started = Date.now();
      const r = await tokenctl(['serve', '--host', '127.0.0.1', '--port', '0', '--db', `postgres://postgres@127.0.0.1:${port}/test?schema=${testSchemaName()}`], {
        env: { HOME: home },
        timeoutMs: 20_000,
      });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/unavailable: connection refused/);
      expect(r.stderr).not.toMatch(/\n\s+at /);
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  }, 30_000);
});
