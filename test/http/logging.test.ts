import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  answer,
  captureLog,
  createClient,
  DOORS,
  formAuth,
  HOUR,
  issue,
  rawRequest,
  rfcBasic,
  specBasic,
  START,
  startTestServer,
  type Client,
  type TestServer,
} from '../helpers/server.js';
import { introspected } from '../helpers/engine.js';

/** Request logs carry client_id and jti, never a token, a secret or an Authorization header. */
describe.each(DOORS)('request logs through the %s', (door) => {
  const log = captureLog();
  let s: TestServer;
  let web: Client;
  let spa: Client;
  const secrets: string[] = [];

  beforeAll(async () => {
    s = await startTestServer({ logger: { level: 'info', stream: log.stream }, door });
    [web, spa] = await Promise.all([createClient(s.engine, 'web-app'), createClient(s.engine, 'spa-app', { public: true })]);
    secrets.push(web.secret!, specBasic(web), rfcBasic(web), specBasic(web).slice(6), Buffer.from(web.secret!).toString('base64'));
  });
  afterAll(() => s?.close());

  it('a mix of successes and failures logs one line each with client_id and jti, and no token or secret', async () => {
    const issued = await issue(s.engine, web);
    const expiring = await issue(s.engine, web, { refreshTtlMs: HOUR });
    const tokens = [issued.access_token, issued.refresh_token, expiring.refresh_token];

    const refreshed = await s.post('/oauth/token', { grant_type: 'refresh_token', refresh_token: issued.refresh_token }, { authorization: specBasic(web) });
    tokens.push(refreshed.json.access_token as string);
    const introspected = await s.post('/oauth/introspection', { token: issued.access_token, token_type_hint: 'access_token', ...formAuth(web) });
    await s.post('/oauth/introspection', { token: issued.refresh_token, token_type_hint: 'refresh_token', ...formAuth(spa) });
    const revoked = await s.post('/oauth/revocation', { token: issued.access_token, token_type_hint: 'access_token' }, { authorization: rfcBasic(web) });
    await s.post('/oauth/revocation', { token: issued.access_token, token_type_hint: 'access_token', client_id: web.id, client_secret: web.secret + 'x' });
    secrets.push(web.secret + 'x');
    s.clock.advance(HOUR);
    const expired = await s.post('/oauth/token', { grant_type: 'refresh_token', refresh_token: expiring.refresh_token }, { authorization: specBasic(web) });
    s.clock.set(START);
    expect(expired.text).toContain(expiring.refresh_token); // spec 7.1 echoes it to the client...
    await answer(await fetch(`${s.url}/oauth/token?refresh_token=${issued.refresh_token}&client_secret=${web.secret}`));
    await answer(await fetch(`${s.url}/lookup/${issued.refresh_token}`));
    await s.post('/oauth/token', `grant_type=refresh_token&refresh_token=${issued.refresh_token}&refresh_token=${issued.refresh_token}`, { authorization: specBasic(web) });

    const text = log.text();
    for (const t of tokens) expect(text).not.toContain(t.slice(4)); // ...but never the logs
    for (const secret of secrets) expect(text).not.toContain(secret);
    expect(text.toLowerCase()).not.toContain('authorization');

    const requests = log.lines().filter((l) => l.msg === 'request');
    expect(requests).toHaveLength(9);
    expect(requests[0]).toMatchObject({ method: 'POST', path: '/oauth/token', status: 200, client_id: 'web-app', jti: refreshed.json.jti });
    expect(requests[1]).toMatchObject({ path: '/oauth/introspection', status: 200, client_id: 'web-app', jti: introspected.json.jti });
    expect(requests[2]).toMatchObject({ path: '/oauth/introspection', client_id: 'spa-app' });
    expect(requests[3]).toMatchObject({ path: '/oauth/revocation', status: 200, client_id: 'web-app', jti: issued.jti });
    expect(revoked.json.code).toBe('token_revoke_success');
    expect(requests[4]).toMatchObject({ path: '/oauth/revocation', status: 401, error: 'invalid_client' });
    expect(requests[5]).toMatchObject({ path: '/oauth/token', status: 401, client_id: 'web-app', error: 'invalid_token' });
    expect(requests[6]).toMatchObject({ path: '/oauth/token', status: 405 });
    expect(requests[7]).toMatchObject({ status: 404, path: expect.stringContaining('[redacted]') });
    expect(requests[8]).toMatchObject({ status: 400, error: 'invalid_request' });
    for (const r of requests) {
      expect(r.reqId).toBeTypeOf('string');
      expect(r.ms).toBeTypeOf('number');
    }
  });

  it('an unexpected error is logged server-side (with its detail) and answered without it', async () => {
    const original = s.store.findTokenByDigest.bind(s.store);
    s.store.findTokenByDigest = async () => {
      throw new Error('disk on fire');
    };
    try {
      const r = await s.post('/oauth/introspection', { token: 'tca_' + 'x'.repeat(43), token_type_hint: 'access_token', client_id: spa.id });
      expect(r.status).toBe(500);
      expect(r.text).not.toContain('disk on fire');
    } finally {
      s.store.findTokenByDigest = original;
    }
    const errorLine = log.lines().find((l) => l.msg === 'unexpected error');
    expect(errorLine).toMatchObject({ level: 50, err: { message: 'disk on fire' } });
  });
});

/** The revocation's log line carries the jti the engine acted on, on both HTTP paths, and only then. */
describe('revocation log lines', () => {
  const log = captureLog();
  let s: TestServer;
  let web: Client;
  let other: Client;

  beforeAll(async () => {
    s = await startTestServer({ logger: { level: 'info', stream: log.stream } });
    [web, other] = await Promise.all([createClient(s.engine, 'web-app'), createClient(s.engine, 'other-app')]);
  });
  afterAll(() => s?.close());

  /** A revocation through fastify's route: a chunked body is never taken by the fast path. */
  async function revokeChunked(client: Client, token: string, hint: string): Promise<{ status: number; body: string }> {
    const form = new URLSearchParams({ token, token_type_hint: hint, ...formAuth(client) }).toString();
    const head = 'POST /oauth/revocation HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n';
    return rawRequest(s.port, `${head}${form.length.toString(16)}\r\n${form}\r\n0\r\n\r\n`);
  }

  it('revoked and already revoked name the jti, over the fast path and over fastify; token_invalid names none', async () => {
    const issued = await issue(s.engine, web);
    const refreshJti = ((await introspected(s.engine, issued.refresh_token)) as { jti: string }).jti;
    const form = (token: string, hint: string, client = web) => ({ token, token_type_hint: hint, ...formAuth(client) });

    const fast = await s.post('/oauth/revocation', form(issued.access_token, 'access_token'));
    const fastAgain = await s.post('/oauth/revocation', form(issued.access_token, 'access_token'));
    const routed = await revokeChunked(web, issued.refresh_token, 'refresh_token');
    const routedAgain = await revokeChunked(web, issued.refresh_token, 'refresh_token');
    const foreign = await s.post('/oauth/revocation', form(issued.access_token, 'access_token', other));
    const foreignRouted = await revokeChunked(other, issued.refresh_token, 'refresh_token');

    // The wire record is code and message only, whichever path answered.
    expect(fast.json).toEqual({ code: 'token_revoke_success', message: `The access_token ${issued.jti} has been revoked` });
    expect(fastAgain.json).toEqual({ code: 'token_already_revoked', message: `The access_token ${issued.jti} was already revoked` });
    expect(JSON.parse(routed.body)).toEqual({ code: 'token_revoke_success', message: `The refresh_token ${refreshJti} has been revoked` });
    expect(JSON.parse(routedAgain.body)).toEqual({ code: 'token_already_revoked', message: `The refresh_token ${refreshJti} was already revoked` });
    expect(foreign.json).toEqual({ code: 'token_invalid', message: expect.any(String) });
    expect(JSON.parse(foreignRouted.body)).toMatchObject({ code: 'token_invalid' });

    const lines = log.lines().filter((l) => l.msg === 'request' && l.path === '/oauth/revocation');
    expect(lines).toHaveLength(6);
    expect(lines.map((l) => [l.status, l.client_id, l.jti])).toEqual([
      [200, 'web-app', issued.jti],
      [200, 'web-app', issued.jti],
      [200, 'web-app', refreshJti],
      [200, 'web-app', refreshJti],
      [200, 'other-app', undefined],
      [200, 'other-app', undefined],
    ]);
    expect(log.text()).not.toContain(issued.access_token.slice(4));
    expect(log.text()).not.toContain(issued.refresh_token.slice(4));
  });
});

describe('log level', () => {
  it('at warn, requests are not logged', async () => {
    const log = captureLog();
    const s = await startTestServer({ logger: { level: 'warn', stream: log.stream } });
    try {
      await answer(await fetch(s.url + '/healthz'));
      await s.post('/oauth/introspection', 'token=x');
      expect(log.lines().filter((l) => l.msg === 'request')).toEqual([]);
    } finally {
      await s.close();
    }
  });
});
