import { connect } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AnswerRecord } from '../../src/http/observer.js';
import { parseRawAnswer, rawExchange } from '../helpers/raw-http.js';
import { captureLog, createClient, formAuth, HOUR, issue, postForm, specBasic, START, startTestServer, type Client, type TestServer } from '../helpers/server.js';

/**
 * `buildServer({ observer })`: one record per answer, whichever door the request came through
 * (the fast path over a socket, fastify's routes through `inject` or for what the fast path
 * leaves to it, Node's parser refusing it), matching the request sent.
 */
describe('the answer observer', () => {
  let s: TestServer;
  let web: Client;
  let spa: Client;
  let records: AnswerRecord[] = [];
  let total = 0;
  const log = captureLog();

  beforeAll(async () => {
    // Logging at info too: the log line and the record come from the same place.
    s = await startTestServer({ rotateRefreshTokens: true, observer: (r) => (total = records.push(r) && total + 1), logger: { level: 'info', stream: log.stream } });
    [web, spa] = await Promise.all([createClient(s.engine, 'web-app'), createClient(s.engine, 'spa-app', { public: true })]);
  });
  beforeEach(() => {
    records = [];
  });
  afterAll(() => s?.close());

  const inject = (url: string, form: Record<string, string>, headers: Record<string, string> = {}) =>
    s.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, payload: new URLSearchParams(form).toString() });

  /** The one record of the request just answered (the observer is called after the answer is written). */
  async function only(): Promise<AnswerRecord> {
    await new Promise((r) => setImmediate(r));
    expect(records).toHaveLength(1);
    const [record] = records;
    expect(record!.durationMs).toBeGreaterThanOrEqual(0);
    records = [];
    return record!;
  }

  it('a refresh with rotation, over a socket and through fastify', async () => {
    const r = await postForm(s.url, '/oauth/token', { grant_type: 'refresh_token', refresh_token: (await issue(s.engine, web)).refresh_token }, { authorization: specBasic(web) });
    expect(r.status).toBe(200);
    expect(await only()).toEqual({ endpoint: 'token', status: 200, errorCode: null, reason: null, clientId: 'web-app', outcome: { kind: 'refreshed', rotated: true }, durationMs: expect.any(Number) });
    const i = await inject('/oauth/token', { grant_type: 'refresh_token', refresh_token: (await issue(s.engine, spa)).refresh_token, client_id: spa.id });
    expect(i.statusCode).toBe(200);
    expect(await only()).toMatchObject({ endpoint: 'token', status: 200, clientId: 'spa-app', outcome: { kind: 'refreshed', rotated: true } });
  });

  it('a replaced refresh token presented again: 401 invalid_token, reuse detected, its grant revoked', async () => {
    const issued = await issue(s.engine, web);
    const form = { grant_type: 'refresh_token', refresh_token: issued.refresh_token, ...formAuth(web) };
    expect((await postForm(s.url, '/oauth/token', form)).status).toBe(200);
    await only();
    s.clock.advance(HOUR / 60); // past the rotation race window
    const again = await postForm(s.url, '/oauth/token', form);
    s.clock.set(START);
    expect(again.status).toBe(401);
    const record = await only();
    expect(record).toEqual({
      endpoint: 'token',
      status: 401,
      errorCode: 'invalid_token',
      reason: 'revoked',
      clientId: 'web-app',
      outcome: { kind: 'reuse_detected', tokens: expect.any(Number) },
      durationMs: expect.any(Number),
    });
    // Every token of the grant: the issued pair, and the pair the rotation made.
    expect(record.outcome).toEqual({ kind: 'reuse_detected', tokens: 4 });
  });

  it('an expired refresh token names its client and the reason', async () => {
    const issued = await issue(s.engine, web, { refreshTtlMs: HOUR });
    s.clock.advance(2 * HOUR);
    const r = await inject('/oauth/token', { grant_type: 'refresh_token', refresh_token: issued.refresh_token, ...formAuth(web) });
    s.clock.set(START);
    expect(r.statusCode).toBe(401);
    expect(await only()).toMatchObject({ endpoint: 'token', status: 401, errorCode: 'invalid_token', reason: 'expired', clientId: 'web-app', outcome: null });
  });

  it('client authentication failures carry their reason, and no client', async () => {
    const token = (await issue(s.engine, web)).access_token;
    const cases: [Record<string, string>, Record<string, string>, string][] = [
      [{ token, client_id: web.id, client_secret: 'wrong-password-1' }, {}, 'bad_secret'],
      [{ token, client_id: 'nobody-here' }, {}, 'unknown_client'],
      [{ token, client_id: web.id }, {}, 'no_secret'],
      [{ token, client_id: spa.id, client_secret: 'a-password-1' }, {}, 'unexpected_secret'],
      [{ token }, { authorization: 'Basic !!!' }, 'malformed_header'],
    ];
    for (const [form, headers, reason] of cases) {
      expect((await postForm(s.url, '/oauth/introspection', form, headers)).status).toBe(401);
      expect(await only()).toMatchObject({ endpoint: 'introspection', status: 401, errorCode: 'invalid_client', reason, clientId: null, outcome: null });
    }
    expect((await postForm(s.url, '/oauth/token', { grant_type: 'refresh_token', refresh_token: 'x' })).status).toBe(401);
    expect(await only()).toMatchObject({ endpoint: 'token', errorCode: 'invalid_client', reason: 'no_credentials' });
  });

  it('revocation: a single token, a grant, and nothing', async () => {
    const issued = await issue(s.engine, web);
    const revoke = (token: string) => postForm(s.url, '/oauth/revocation', { token, ...formAuth(web) });
    expect((await revoke(issued.access_token)).json.code).toBe('token_revoke_success');
    expect(await only()).toMatchObject({ endpoint: 'revocation', status: 200, clientId: 'web-app', outcome: { kind: 'revoked', grant: false } });
    expect((await revoke(issued.refresh_token)).json.code).toBe('token_revoke_success');
    expect(await only()).toMatchObject({ outcome: { kind: 'revoked', grant: true } });
    expect((await revoke(issued.refresh_token)).json.code).toBe('token_already_revoked');
    expect(await only()).toMatchObject({ outcome: { kind: 'revoke_noop' } });
    expect((await revoke('tca_unknown')).json.code).toBe('token_invalid');
    expect(await only()).toMatchObject({ status: 200, outcome: { kind: 'revoke_noop' } });
  });

  it('introspection, active and not', async () => {
    const issued = await issue(s.engine, web);
    await inject('/oauth/introspection', { token: issued.access_token, ...formAuth(web) });
    expect(await only()).toMatchObject({ endpoint: 'introspection', status: 200, clientId: 'web-app', outcome: { kind: 'introspected', active: true } });
    await postForm(s.url, '/oauth/introspection', { token: 'tca_unknown', ...formAuth(web) });
    expect(await only()).toMatchObject({ endpoint: 'introspection', status: 200, clientId: 'web-app', outcome: { kind: 'introspected', active: false } });
  });

  it('what fastify answers: 400, 404, 405, 413, 415, metadata, healthz', async () => {
    const cases: [() => Promise<unknown>, Partial<AnswerRecord>][] = [
      [() => postForm(s.url, '/oauth/introspection', { token: 'x' }, { 'content-type': 'text/plain' }), { endpoint: 'introspection', status: 415, errorCode: 'invalid_request' }],
      [() => postForm(s.url, '/oauth/revocation', { token: 'x'.repeat(20_000) }), { endpoint: 'revocation', status: 413 }],
      [() => postForm(s.url, '/oauth/token', 'grant_type=password', {}), { endpoint: 'token', status: 400, errorCode: 'unsupported_grant_type' }],
      [() => fetch(`${s.url}/oauth/token`), { endpoint: 'token', status: 405, errorCode: 'invalid_request' }],
      [() => fetch(`${s.url}/nowhere/tcr_${'a'.repeat(43)}`), { endpoint: 'other', status: 404, errorCode: 'not_found' }],
      [() => fetch(`${s.url}/.well-known/oauth-authorization-server`), { endpoint: 'metadata', status: 200, errorCode: null }],
      [() => s.app.inject({ method: 'GET', url: '/healthz' }), { endpoint: 'health', status: 200, errorCode: null }],
    ];
    for (const [send, expected] of cases) {
      await send();
      expect(await only()).toMatchObject({ clientId: null, outcome: null, reason: null, ...expected });
    }
  });

  it("Node's parser refusals and the requests Node would answer bare", async () => {
    const bad = await rawExchange(s.port, 'POST /oauth/revocation HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab');
    expect(bad.status).toBe(400);
    expect(await only()).toMatchObject({ endpoint: 'revocation', status: 400, errorCode: 'invalid_request', clientId: null, outcome: null, durationMs: 0 });
    const noHost = await rawExchange(s.port, 'GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n');
    expect(noHost.status).toBe(400);
    expect(await only()).toMatchObject({ endpoint: 'health', status: 400, errorCode: 'invalid_request' });
    const expect417 = await rawExchange(s.port, 'POST /oauth/token HTTP/1.1\r\nHost: x\r\nExpect: nothing\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
    expect(expect417.status).toBe(417);
    expect(await only()).toMatchObject({ endpoint: 'token', status: 417 });
  });

  it('every answer above had one record and one log line, from the same writer', () => {
    const lines = log.lines().filter((l) => l.msg === 'request');
    expect(total).toBeGreaterThan(20);
    expect(lines).toHaveLength(total);
  });
});

describe('a request on an open connection while the server closes', () => {
  it("is answered 503 by the server's own writer (record, no-store, Connection: close), observed, and the connection closed", async () => {
    const records: AnswerRecord[] = [];
    const s = await startTestServer({ observer: (r) => records.push(r) });
    const spa = await createClient(s.engine, 'spa-app', { public: true });
    // Hold an introspection inside the engine, so that its connection stays open while the server closes.
    let release!: () => void;
    let entered!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    const gate = new Promise<void>((r) => (release = r));
    const read = s.store.findClientAndToken.bind(s.store);
    s.store.findClientAndToken = async (...args) => {
      entered();
      await gate;
      return read(...args);
    };
    const body = new URLSearchParams({ token: 'tca_' + 'a'.repeat(43), client_id: spa.id }).toString();
    const socket = connect(s.port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    const ended = new Promise<void>((r) => socket.on('close', () => r()));
    socket.write(`POST /oauth/introspection HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    await inside;
    const closing = s.close();
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    await new Promise((r) => setTimeout(r, 50));
    release();
    await ended;
    await closing;
    const text = Buffer.concat(chunks).toString('utf8');
    expect(text.match(/HTTP\/1\.1 \d+/g)).toEqual(['HTTP/1.1 200', 'HTTP/1.1 503']);
    const last = parseRawAnswer(text);
    expect(last.headers).toMatchObject({ 'cache-control': 'no-store', pragma: 'no-cache', connection: 'close', 'retry-after': '2' });
    expect(JSON.parse(last.body)).toMatchObject({ status: 503, error: 'Service Unavailable', path: '/healthz' });
    // The 503 is written (queued behind the held answer) and recorded first.
    expect(records.map((r) => [r.endpoint, r.status])).toEqual([
      ['health', 503],
      ['introspection', 200],
    ]);
  });
});
