import { request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { expect } from 'vitest';
import { ManualClock } from '../../src/engine/clock.js';
import { Engine, type EngineOptions } from '../../src/engine/engine.js';
import type { TokenResponse } from '../../src/engine/results.js';
import { buildServer, type BuildServerOptions, type TokenctlApp } from '../../src/http/server.js';
import { MemoryStore } from '../../src/store/memory/index.js';
import type { TokenStore } from '../../src/store/store.js';

/**
 * The real server on 127.0.0.1, port 0, over real sockets: an Engine on a MemoryStore (or the
 * store given) with a ManualClock, so that expiry is tested by moving the clock, never by sleeping.
 */
export const START = Date.UTC(2026, 0, 1, 12, 0, 0) + 789;
export const SECOND = 1000;
export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;
export const ISSUER = 'https://issuer.example.test';
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/**
 * The two doors of the server, which every endpoint test goes through (`describe.each(DOORS)`):
 * a real socket, where a POST of a form takes the fast path (`fast-path.ts`), and fastify's
 * `inject`, which never reaches the fast path and is answered by fastify's routes.
 */
export const DOORS = ['fast path', 'fastify'] as const;
export type Door = (typeof DOORS)[number];

export interface TestServer {
  app: TokenctlApp;
  /** The door {@link post} goes through. */
  door: Door;
  /** POSTs a form (an object, or a raw body string) through {@link door}. */
  post(path: string, form: Record<string, string> | string, headers?: Record<string, string>): Promise<Answer>;
  engine: Engine;
  store: TokenStore;
  clock: ManualClock;
  /** `http://127.0.0.1:<port>` (or https). */
  url: string;
  port: number;
  close(): Promise<void>;
}

export interface TestServerOptions extends Omit<EngineOptions, 'store' | 'clock'> {
  store?: TokenStore;
  clock?: ManualClock;
  logger?: BuildServerOptions['logger'];
  https?: BuildServerOptions['https'];
  connections?: BuildServerOptions['connections'];
  observer?: BuildServerOptions['observer'];
  trustProxy?: BuildServerOptions['trustProxy'];
  readiness?: BuildServerOptions['readiness'];
  requestDeadlineMs?: BuildServerOptions['requestDeadlineMs'];
  /** The door of `post`: the socket (the default) or fastify's inject. */
  door?: Door;
}

export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const { store = new MemoryStore(), clock = new ManualClock(START), logger, https, connections, observer, trustProxy, readiness, requestDeadlineMs, door = 'fast path', ...engineOptions } = options;
  const engine = new Engine({ issuer: ISSUER, node: 'node-t', ...engineOptions, store, clock });
  const app = buildServer({ engine, logger, https, connections, observer, trustProxy, readiness, requestDeadlineMs });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as AddressInfo).port;
  const url = `${https ? 'https' : 'http'}://127.0.0.1:${port}`;
  return {
    app,
    door,
    post: (path, form, headers) => (door === 'fastify' ? injectForm(app, path, form, headers) : postForm(url, path, form, headers)),
    engine,
    store,
    clock,
    port,
    url,
    close: () => app.close(),
  };
}

/** POSTs a form through fastify's `inject`: its routes, never the fast path. */
export async function injectForm(app: TokenctlApp, path: string, form: Record<string, string> | string, headers: Record<string, string> = {}): Promise<Answer> {
  const payload = typeof form === 'string' ? form : new URLSearchParams(form).toString();
  const r = await app.inject({ method: 'POST', url: path, headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, payload });
  const h = new Headers();
  for (const [name, value] of Object.entries(r.headers)) if (value !== undefined) h.set(name, Array.isArray(value) ? value.join(', ') : String(value));
  return answer(new Response(r.statusCode === 204 ? null : r.rawPayload, { status: r.statusCode, headers: h }));
}

export interface Client {
  id: string;
  /** null for a public client. */
  secret: string | null;
}

/** Registers a client through the engine (scrypt-hashed, as in production). */
export async function createClient(engine: Engine, id: string, options: { public?: boolean; scope?: string; secret?: string } = {}): Promise<Client> {
  const { client_secret } = await engine.createClient(
    { id, name: id, public: options.public, secret: options.secret, scope: options.scope ?? 'read write', orgId: 'org-' + id, audience: 'https://api.example.test' },
    'test',
  );
  return { id, secret: client_secret };
}

export function issue(engine: Engine, client: Client, overrides: { username?: string; scope?: string; accessTtlMs?: number; refreshTtlMs?: number } = {}): Promise<TokenResponse> {
  return engine.issue({ clientId: client.id, username: overrides.username ?? 'alice', ...overrides });
}

/** Spec part 5, refresh endpoint: scenario I `base64(id ":" base64(password))`, scenario II `base64(id ":")`. */
export function specBasic(client: Client): string {
  const inner = client.secret === null ? `${client.id}:` : `${client.id}:${Buffer.from(client.secret).toString('base64')}`;
  return 'Basic ' + Buffer.from(inner).toString('base64');
}

/** RFC 6749 §2.3.1: `base64(urlencode(id) ":" urlencode(password))`. */
export function rfcBasic(client: Client): string {
  const enc = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');
  return 'Basic ' + Buffer.from(`${enc(client.id)}:${enc(client.secret ?? '')}`).toString('base64');
}

/** Spec part 5, revocation/introspection: form parameters; no client_secret for a public client. */
export function formAuth(client: Client): Record<string, string> {
  return client.secret === null ? { client_id: client.id } : { client_id: client.id, client_secret: client.secret };
}

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  /** The parsed JSON body (throws if it is not JSON). */
  json: Record<string, unknown>;
}

/** POSTs a form (an object, or a raw body string) with `fetch`. */
export async function postForm(
  url: string,
  path: string,
  form: Record<string, string> | string,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const body = typeof form === 'string' ? form : new URLSearchParams(form).toString();
  const res = await fetch(url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body,
  });
  return answer(res);
}

export async function answer(res: Response): Promise<Answer> {
  const text = await res.text();
  let json: Record<string, unknown> | undefined;
  return {
    status: res.status,
    headers: res.headers,
    text,
    get json() {
      json ??= JSON.parse(text) as Record<string, unknown>;
      return json;
    },
  };
}

/**
 * Sends exactly these bytes on a new TCP connection and returns the raw answer: for requests
 * fetch would normalise (duplicate headers, odd methods, invalid bytes, curl's exact shape).
 * The request must carry `Connection: close`.
 */
export function rawRequest(port: number, bytes: string | Buffer): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const split = text.indexOf('\r\n\r\n');
      const [statusLine, ...lines] = text.slice(0, split).split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const i = line.indexOf(':');
        headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
      }
      resolve({ status: Number(statusLine!.split(' ')[1]), headers, body: text.slice(split + 4) });
    });
    // Not end(): a half-closed socket makes Node's server drop an answer that takes a while.
    // The request must say `Connection: close`, so that the server ends the exchange.
    socket.write(bytes);
  });
}

/** A log destination that keeps every line, for asserting on what the server logged. */
export function captureLog(): { stream: Writable; lines: () => Record<string, unknown>[]; text: () => string } {
  let buffer = '';
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      buffer += chunk.toString('utf8');
      done();
    },
  });
  return {
    stream,
    text: () => buffer,
    lines: () =>
      buffer
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

/**
 * A `fetch` over node:https that trusts `ca`: Node 20's fetch cannot take a CA without undici's
 * Agent, and oauth4webapi accepts a custom fetch. Enough for form POSTs and GETs.
 */
export function fetchTrusting(ca: string): typeof fetch {
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(input instanceof Request ? input.url : input);
    const method = init?.method ?? 'GET';
    const headers = Object.fromEntries(new Headers(init?.headers).entries());
    const body = init?.body === undefined || init.body === null ? undefined : String(init.body instanceof URLSearchParams ? init.body.toString() : init.body);
    return new Promise<Response>((resolve, reject) => {
      const req = httpsRequest(url, { method, headers, ca }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const h = new Headers();
          for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) h.set(k, Array.isArray(v) ? v.join(', ') : v);
          const status = res.statusCode ?? 0;
          resolve(new Response(status === 204 || status === 304 ? null : Buffer.concat(chunks), { status, headers: h }));
        });
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body);
    });
  }) as typeof fetch;
}

/** Spec 7.2 and contract 3: the error record of revocation and introspection. */
export function expectRecord(r: Answer, status: number, error: string, path: string): void {
  expect(r.status, r.text).toBe(status);
  expect(Object.keys(r.json).sort()).toEqual(['error', 'message', 'path', 'status', 'timestamp']);
  expect(r.json.timestamp).toMatch(/^\d{13}$/);
  expect(Math.abs(Number(r.json.timestamp) - Date.now())).toBeLessThan(60_000);
  expect(r.json.status).toBe(status);
  expect(r.json.error).toBe(error);
  expect(typeof r.json.message).toBe('string');
  expect(r.json.path).toBe(path);
  expect(r.headers.get('cache-control')).toBe('no-store');
  expect(r.headers.get('pragma')).toBe('no-cache');
}

