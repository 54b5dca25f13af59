import { scrypt } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildSpecAuthorization } from '../../src/engine/client-auth.js';
import { median, post, serveOneClient, type ServeProcess } from '../helpers/load.js';
import { createClient, startTestServer, type Client, type TestServer } from '../helpers/server.js';

/**
 * No client enumeration by timing (the "Secrets"): a failed authentication costs the
 * same whether the client id exists or not.
 *
 * Deterministically: the number of scrypt hashes a refused request runs, counted with a spy, is
 * the same for an unknown client id as for a known one with a wrong password, for every way of
 * presenting credentials, over the fast path and fastify's path; and the two answers differ only
 * in the client id they name. Coarsely, on the real server process: the median times of the two
 * kinds of refusal, sampled interleaved, are within a factor of 2 of each other (the defect, no
 * hash for an unknown id, makes them differ by an order of magnitude).
 */

vi.mock('node:crypto', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:crypto')>();
  return { ...actual, scrypt: vi.fn(actual.scrypt) };
});
const scrypts = () => vi.mocked(scrypt).mock.calls.length;

let fresh = 0;
/** A password never presented before, so that no remembered refusal answers for it. */
const newPassword = () => `guess-${process.pid}-${++fresh}-${Math.random().toString(36).slice(2)}`;

describe('scrypt work of a refused request: unknown client = known client', () => {
  let s: TestServer;
  let conf: Client;
  let pub: Client;

  beforeAll(async () => {
    s = await startTestServer();
    conf = await createClient(s.engine, 'conf');
    pub = await createClient(s.engine, 'pub', { public: true });
    // The hash an unknown id is checked against is made once, by the first such request.
    await post(`${s.url}/oauth/introspection`, { token: 'x', token_type_hint: 'access_token', client_id: 'warm-up', client_secret: newPassword() });
  }, 60_000);
  afterAll(() => s?.close());

  type Presentation = (id: string, password: string | undefined) => { path: string; form: Record<string, string>; headers: Record<string, string> };
  const presentations: [string, Presentation][] = [
    ['form parameters (revocation)', (id, pw) => ({ path: '/oauth/revocation', form: { token: 'x', token_type_hint: 'access_token', client_id: id, ...(pw ? { client_secret: pw } : {}) }, headers: {} })],
    ['form parameters (introspection)', (id, pw) => ({ path: '/oauth/introspection', form: { token: 'x', token_type_hint: 'access_token', client_id: id, ...(pw ? { client_secret: pw } : {}) }, headers: {} })],
    ["the spec's Basic header (token)", (id, pw) => ({ path: '/oauth/token', form: { grant_type: 'refresh_token', refresh_token: 'x' }, headers: { authorization: buildSpecAuthorization(id, pw) } })],
    [
      "RFC 6749's Basic header (token)",
      (id, pw) => ({ path: '/oauth/token', form: { grant_type: 'refresh_token', refresh_token: 'x' }, headers: { authorization: 'Basic ' + Buffer.from(`${id}:${encodeURIComponent(pw ?? '')}`).toString('base64') } }),
    ],
    ['a Basic header (introspection)', (id, pw) => ({ path: '/oauth/introspection', form: { token: 'x', token_type_hint: 'access_token' }, headers: { authorization: buildSpecAuthorization(id, pw) } })],
  ];

  /** Sends the request and returns the scrypt hashes it ran and its answer without the varying parts. */
  async function cost(p: ReturnType<Presentation>, via: 'socket' | 'inject'): Promise<{ hashes: number; status: number; answer: string }> {
    const before = scrypts();
    let status: number;
    let text: string;
    if (via === 'socket') {
      const r = await post(s.url + p.path, p.form, p.headers);
      [status, text] = [r.status, r.text];
    } else {
      const r = await s.app.inject({ method: 'POST', url: p.path, headers: { 'content-type': 'application/x-www-form-urlencoded', ...p.headers }, payload: new URLSearchParams(p.form).toString() });
      [status, text] = [r.statusCode, r.body];
    }
    const answer = text.replace(/"timestamp":"\d+"/, '"timestamp":"T"').replace(/: [^"]*"/, ': ID"');
    return { hashes: scrypts() - before, status, answer };
  }

  for (const via of ['socket', 'inject'] as const) {
    describe(via === 'socket' ? 'over a socket (the fast path)' : "through fastify's router (inject)", () => {
      it.each(presentations)('%s: a wrong password for a known client and any password for an unknown one', async (_name, present) => {
        for (let i = 0; i < 3; i++) {
          const password = newPassword();
          const known = await cost(present(conf.id, password), via);
          const unknown = await cost(present(`ghost-${fresh}-${i}`, password), via);
          expect(known.status).toBe(401);
          expect(unknown.status).toBe(401);
          expect(known.hashes).toBeGreaterThanOrEqual(1);
          expect(unknown.hashes).toBe(known.hashes);
          expect(unknown.answer).toBe(known.answer);
        }
      });

      it.each(presentations)('%s: a public client sending a password costs what an unknown client does', async (_name, present) => {
        const password = newPassword();
        const publicWithPassword = await cost(present(pub.id, password), via);
        const unknown = await cost(present(`ghost-pub-${fresh}`, password), via);
        expect(publicWithPassword.status).toBe(401);
        expect(publicWithPassword.hashes).toBe(unknown.hashes);
        expect(publicWithPassword.answer).toBe(unknown.answer);
      });

      it.each(presentations)('%s: no password at all costs no hash, known or not', async (_name, present) => {
        const known = await cost(present(conf.id, undefined), via);
        const unknown = await cost(present(`ghost-none-${fresh++}`, undefined), via);
        expect([known.status, unknown.status]).toEqual([401, 401]);
        expect([known.hashes, unknown.hashes]).toEqual([0, 0]);
        expect(unknown.answer).toBe(known.answer);
      });
    });
  }
});

describe('refusal time on the real server: unknown client ≈ known client', { timeout: 60_000 }, () => {
  const SECRET = 'timing-client-password-0123456789';
  let server: ServeProcess;
  let stop: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    ({ server, stop } = await serveOneClient('tokenctl-timing-', SECRET));
  }, 60_000);
  afterAll(async () => {
    await stop?.();
  });

  async function timed(send: () => Promise<{ status: number }>, status: number): Promise<number> {
    const started = performance.now();
    const r = await send();
    const ms = performance.now() - started;
    expect(r.status).toBe(status);
    return ms;
  }

  it.each([
    ['introspection, form parameters', 16, (id: string, pw: string) => post(`${server.url}/oauth/introspection`, { token: 'x', token_type_hint: 'access_token', client_id: id, client_secret: pw })],
    ["token, the spec's Basic header", 8, (id: string, pw: string) => post(`${server.url}/oauth/token`, { grant_type: 'refresh_token', refresh_token: 'x' }, { authorization: buildSpecAuthorization(id, pw) })],
  ] as const)('%s: medians of %i interleaved pairs within a factor of 2', async (_name, pairs, send) => {
    await timed(() => send('ghost-warm-up', newPassword()), 401); // the unknown-client hash is made once
    const known: number[] = [];
    const unknown: number[] = [];
    for (let i = 0; i < pairs; i++) {
      const password = newPassword();
      const k = () => timed(() => send('victim', password), 401);
      const u = () => timed(() => send(`ghost-${i}-${fresh}`, password), 401);
      // Alternate which goes first, so that neither side always follows the other.
      if (i % 2 === 0) {
        known.push(await k());
        unknown.push(await u());
      } else {
        unknown.push(await u());
        known.push(await k());
      }
    }
    const ratio = median(unknown) / median(known);
    expect(ratio, `median unknown ${median(unknown).toFixed(1)} ms, known ${median(known).toFixed(1)} ms`).toBeGreaterThan(0.5);
    expect(ratio, `median unknown ${median(unknown).toFixed(1)} ms, known ${median(known).toFixed(1)} ms`).toBeLessThan(2);
    // The measurement can tell hashing from not hashing: a remembered correct password (the
    // answer is 200, or 401 invalid_token for the made-up refresh token) is faster than either.
    await send('victim', SECRET);
    const cached: number[] = [];
    for (let i = 0; i < 5; i++) {
      const started = performance.now();
      const r = await send('victim', SECRET);
      cached.push(performance.now() - started);
      expect(r.body).not.toMatchObject({ error: 'invalid_client' });
    }
    expect(median(cached)).toBeLessThan(median(known));
  });
});
