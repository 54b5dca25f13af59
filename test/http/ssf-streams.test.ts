import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createClient, issue, startTestServer, type TestServer, type TestServerOptions } from '../helpers/server.js';

const PUSH = 'urn:ietf:rfc:8935';
const POLL = 'urn:ietf:rfc:8936';
const SESSION_REVOKED = 'https://schemas.openid.net/secevent/caep/event-type/session-revoked';
const TOKENS_REVOKED = 'urn:tokenctl:secevent:tokens-revoked';
const VERIFICATION = 'https://schemas.openid.net/secevent/ssf/event-type/verification';

/** SSF 1.0 §7 and §8 through the server: discovery, authorization by scope, the stream API's shapes and statuses. */
describe('SSF stream management', () => {
  let s: TestServer;
  afterEach(() => s?.close());

  const setUp = async (issuer?: string, options: TestServerOptions = {}) => {
    s = await startTestServer({ ...options, ...(issuer ? { issuer } : {}) });
    const rs = await createClient(s.engine, 'rs', { scope: 'ssf.manage ssf.read read' });
    const token = async (scope: string) => (await issue(s.engine, rs, { scope })).access_token;
    const call = async (method: string, path: string, access: string | undefined, body?: unknown) => {
      const res = await fetch(s.url + path, {
        method,
        headers: { ...(access ? { authorization: `Bearer ${access}` } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      const text = await res.text();
      return { status: res.status, body: text === '' ? undefined : (JSON.parse(text) as Record<string, unknown>), challenge: res.headers.get('www-authenticate') };
    };
    return { rs, token, call };
  };

  it('the metadata: at the well-known path, and for an issuer with a path after it (404 for another path); only endpoints that answer', async () => {
    const { call } = await setUp('https://issuer.example.test/tenant-1');
    const meta = await call('GET', '/.well-known/ssf-configuration/tenant-1', undefined);
    expect(meta.status).toBe(200);
    expect(meta.body).toMatchObject({
      issuer: 'https://issuer.example.test/tenant-1',
      configuration_endpoint: 'https://issuer.example.test/tenant-1/ssf/stream',
      status_endpoint: 'https://issuer.example.test/tenant-1/ssf/status',
      verification_endpoint: 'https://issuer.example.test/tenant-1/ssf/verify',
      authorization_schemes: [{ spec_urn: 'urn:ietf:rfc:6749' }],
    });
    expect(meta.body).not.toHaveProperty('add_subject_endpoint');
    expect((await call('GET', '/.well-known/ssf-configuration/tenant-2', undefined)).status).toBe(404);
    expect((await call('GET', '/.well-known/ssf-configuration', undefined)).status).toBe(200);
  });

  it('RFC 6750: no token 401 with a Bearer challenge; ssf.read reads but does not write (403 insufficient_scope); a revoked token 401', async () => {
    const { token, call } = await setUp();
    const none = await call('GET', '/ssf/stream', undefined);
    expect(none.status).toBe(401);
    expect(none.challenge).toMatch(/^Bearer realm="tokenctl", error="invalid_token"/);
    const reader = await token('ssf.read');
    expect((await call('GET', '/ssf/stream', reader)).status).toBe(200);
    const refused = await call('POST', '/ssf/stream', reader, { delivery: { method: POLL } });
    expect(refused.status).toBe(403);
    expect(refused.challenge).toContain('error="insufficient_scope"');
    expect(refused.challenge).toContain('scope="ssf.manage"');
    const other = await token('read');
    expect((await call('GET', '/ssf/stream', other)).status).toBe(403);
    const manager = await token('ssf.manage');
    await s.engine.revokeAsOperator(manager, 'test');
    expect((await call('GET', '/ssf/stream', manager)).status).toBe(401);
  });

  it('create 201, list an array, read, PATCH keeps what it is not given, PUT resets it, a second poll stream 409, delete 204 then 404', async () => {
    const { token, call } = await setUp();
    const t = await token('ssf.manage');
    expect((await call('GET', '/ssf/stream', t)).body).toEqual([]);
    const created = await call('POST', '/ssf/stream', t, { delivery: { method: POLL }, events_requested: [SESSION_REVOKED, 'urn:example:unknown'], description: 'mine' });
    expect(created.status).toBe(201);
    const id = created.body!.stream_id as string;
    expect(created.body).toMatchObject({ aud: 'rs', events_requested: [SESSION_REVOKED, 'urn:example:unknown'], events_delivered: [SESSION_REVOKED], signing_alg: 'RS256', description: 'mine' });
    expect((await call('POST', '/ssf/stream', t, { delivery: { method: POLL } })).status).toBe(409);
    expect((await call('POST', '/ssf/stream', t, { delivery: { method: 'urn:example:carrier-pigeon' } })).status).toBe(400);
    // A push endpoint on this machine is a private address: refused unless serve says otherwise.
    expect((await call('POST', '/ssf/stream', t, { delivery: { method: PUSH, endpoint_url: 'http://127.0.0.1:9/events' } })).status).toBe(400);
    const list = await call('GET', '/ssf/stream', t);
    expect(Array.isArray(list.body)).toBe(true);
    expect((list.body as unknown as { stream_id: string }[]).map((x) => x.stream_id)).toEqual([id]);
    const patched = await call('PATCH', '/ssf/stream', t, { stream_id: id, events_requested: [TOKENS_REVOKED] });
    expect(patched.body).toMatchObject({ events_delivered: [TOKENS_REVOKED], description: 'mine' });
    const replaced = await call('PUT', '/ssf/stream', t, { stream_id: id, delivery: { method: POLL }, signing_alg: 'ES256' });
    expect(replaced.body).toMatchObject({ events_delivered: [TOKENS_REVOKED, SESSION_REVOKED], signing_alg: 'ES256' });
    expect((await call('PUT', '/ssf/stream', t, { stream_id: id, delivery: { method: PUSH, endpoint_url: 'https://rs.example.test/e' } })).status).toBe(400);
    expect((await call('PATCH', '/ssf/stream', t, { stream_id: 'nope' })).status).toBe(404);
    expect((await call('POST', '/ssf/status', t, { stream_id: id, status: 'sleeping' })).status).toBe(400);
    expect((await call('POST', '/ssf/status', t, { stream_id: id, status: 'disabled' })).body).toEqual({ stream_id: id, status: 'disabled' });
    expect((await call('DELETE', `/ssf/stream?stream_id=${id}`, t)).status).toBe(204);
    expect((await call('GET', `/ssf/stream?stream_id=${id}`, t)).status).toBe(404);
    expect((await call('POST', '/ssf/verify', t, { stream_id: id })).status).toBe(404);
  });

  it('another client neither sees nor changes the stream (404); an operator\'s poll receiver is read only to its client (403)', async () => {
    const { token, call } = await setUp();
    const mine = (await call('POST', '/ssf/stream', await token('ssf.manage'), { delivery: { method: POLL } })).body!.stream_id as string;
    const other = await createClient(s.engine, 'other', { scope: 'ssf.manage' });
    const theirs = (await issue(s.engine, other, { scope: 'ssf.manage' })).access_token;
    expect((await call('GET', `/ssf/stream?stream_id=${mine}`, theirs)).status).toBe(404);
    expect((await call('DELETE', `/ssf/stream?stream_id=${mine}`, theirs)).status).toBe(404);
    await s.engine.addReceiver({ id: 'ops-poll', delivery: 'poll', clientId: 'other' }, 'test');
    expect((await call('GET', '/ssf/stream?stream_id=ops-poll', theirs)).body).toMatchObject({ stream_id: 'ops-poll', events_delivered: [TOKENS_REVOKED], signing_alg: 'ES256' });
    expect((await call('PATCH', '/ssf/stream', theirs, { stream_id: 'ops-poll', description: 'x' })).status).toBe(403);
  });

  it('min_verification_interval: advertised; a verification sooner after the last is refused 429 with Retry-After; a poll stream answers the one asked', async () => {
    const { token, call } = await setUp();
    const t = await token('ssf.manage');
    const created = await call('POST', '/ssf/stream', t, { delivery: { method: POLL } });
    expect(created.body).toMatchObject({ min_verification_interval: 15 });
    const id = created.body!.stream_id as string;
    expect((await call('POST', '/ssf/verify', t, { stream_id: id, state: 'one' })).status).toBe(204);
    s.clock.advance(14_000);
    const res = await fetch(s.url + '/ssf/verify', { method: 'POST', headers: { authorization: `Bearer ${t}`, 'content-type': 'application/json' }, body: JSON.stringify({ stream_id: id, state: 'two' }) });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(((await res.json()) as { error_description: string }).error_description).toMatch(/min_verification_interval \(15 s\)/);
    // The refused one replaced nothing: the poll answers the first verification, with its state.
    const sets = ((await call('POST', '/events/poll', t, { returnImmediately: true })).body as { sets: Record<string, string> }).sets;
    const claims = Object.values(sets).map((set) => JSON.parse(Buffer.from(set.split('.')[1]!, 'base64url').toString()) as { events: Record<string, { state?: string }> });
    expect(claims.map((c) => Object.values(c.events)[0]!.state)).toEqual(['one']);
    s.clock.advance(1_000);
    expect((await call('POST', '/ssf/verify', t, { stream_id: id })).status).toBe(204);
  });

  it('a paused poll stream holds its events, answered once it is enabled; a disabled one drops them', async () => {
    const { token, call } = await setUp();
    const t = await token('ssf.manage');
    const id = (await call('POST', '/ssf/stream', t, { delivery: { method: POLL }, events_requested: [SESSION_REVOKED] })).body!.stream_id as string;
    const app = await createClient(s.engine, 'app');
    const poll = async () => ((await call('POST', '/events/poll', t, { returnImmediately: true })).body as { sets: Record<string, string> }).sets;
    await call('POST', '/ssf/status', t, { stream_id: id, status: 'paused' });
    await s.engine.revokeAsOperator((await issue(s.engine, app)).refresh_token, 'test');
    expect(await poll()).toEqual({});
    await call('POST', '/ssf/status', t, { stream_id: id, status: 'enabled' });
    expect(Object.keys(await poll())).toHaveLength(1);
    await call('POST', '/ssf/status', t, { stream_id: id, status: 'disabled' });
    await s.engine.revokeAsOperator((await issue(s.engine, app)).refresh_token, 'test');
    expect(await poll()).toEqual({});
    // Disabled: nothing held, the one answered but not acknowledged before included.
    expect((await s.engine.listReceivers()).find((r) => r.id === id)).toMatchObject({ pending: 0 });
  });

  it('a verification asked for on a paused push stream is held like its events (SSF §8.1.2.1), pushed once it is enabled', async () => {
    // A push receiver on this machine: every SET it is sent, answered 202 (RFC 8935 §2.2).
    const received: string[] = [];
    const rx = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8').on('data', (d: string) => (body += d));
      req.on('end', () => {
        received.push(body);
        res.writeHead(202).end();
      });
    });
    await new Promise<void>((listening) => rx.listen(0, '127.0.0.1', listening));
    try {
      const { token, call } = await setUp(undefined, { ssfPrivateNetwork: true });
      const t = await token('ssf.manage');
      const endpoint = `http://127.0.0.1:${(rx.address() as AddressInfo).port}/events`;
      const id = (await call('POST', '/ssf/stream', t, { delivery: { method: PUSH, endpoint_url: endpoint } })).body!.stream_id as string;
      const states = () => received.map((set) => (JSON.parse(Buffer.from(set.split('.')[1]!, 'base64url').toString()) as { events: Record<string, { state?: string }> }).events[VERIFICATION]?.state);
      const arrived = async (n: number, ms: number) => {
        for (const until = Date.now() + ms; received.length < n && Date.now() < until; ) await new Promise((r) => setTimeout(r, 20));
        return received.length >= n;
      };

      await call('POST', '/ssf/status', t, { stream_id: id, status: 'paused' });
      expect((await call('POST', '/ssf/verify', t, { stream_id: id, state: 'asked-while-paused' })).status).toBe(204);
      // Pushed at once, it would be here within milliseconds: it is not.
      expect(await arrived(1, 300)).toBe(false);
      expect((await call('POST', '/ssf/status', t, { stream_id: id, status: 'enabled' })).body).toMatchObject({ status: 'enabled' });
      expect(await arrived(1, 5_000)).toBe(true);
      expect(states()).toEqual(['asked-while-paused']);
      // Delivered once: enabling it again sends nothing more; a verification now goes at once.
      await call('POST', '/ssf/status', t, { stream_id: id, status: 'enabled' });
      s.clock.advance(15_000);
      expect((await call('POST', '/ssf/verify', t, { stream_id: id, state: 'asked-while-enabled' })).status).toBe(204);
      expect(await arrived(2, 5_000)).toBe(true);
      expect(states()).toEqual(['asked-while-paused', 'asked-while-enabled']);
    } finally {
      rx.closeAllConnections();
      await new Promise((closed) => rx.close(closed));
    }
  });
});
