import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, createClient, issue, tempStore, type TempStore } from '../helpers/cli.js';
import { POLL, PUSH, SESSION_REVOKED, SsfReceiver, VERIFICATION, type StreamConfig, type VerifiedSet } from './ssf-receiver.js';

/**
 * The receiver of ssf-receiver.ts, written from the SSF and CAEP specifications alone, against a
 * real `tokenctl serve` process (needs `npm run build`) on 127.0.0.1: it manages a push stream
 * (RS256, the interoperability profile's default) and a poll stream (ES256), verifies each, and
 * understands a revocation as CAEP session-revoked by push and by poll.
 */
describe('an SSF receiver written from the specifications', () => {
  let store: TempStore;
  let child: ChildProcess;
  let issuer: string;
  let rx: SsfReceiver;
  let app: { id: string; secret: string | null };
  let push: StreamConfig;
  let poll: StreamConfig;

  beforeAll(async () => {
    store = tempStore();
    const rs = await createClient(store, ['--grant-type', 'client_credentials', '--scope', 'ssf.manage ssf.read']);
    app = await createClient(store, ['--scope', 'read']);
    child = spawn(process.execPath, [BIN, 'serve', '--host', '127.0.0.1', '--port', '0', '--db', store.db, '--ssf-private-network', '--log-level', 'warn'], { env: { ...process.env, NO_COLOR: '1', HOME: store.dir }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
    await new Promise<void>((done, fail) => {
      const timer = setTimeout(() => fail(new Error(`serve did not start:\n${out}\n${err}`)), 30_000);
      child.stdout!.setEncoding('utf8').on('data', (d: string) => {
        out += d;
        if (/listening on /.test(out)) {
          clearTimeout(timer);
          done();
        }
      });
      child.on('exit', (code) => fail(new Error(`serve exited (${code}):\n${out}\n${err}`)));
    });
    issuer = /listening on (http:\/\/\S+)/.exec(out)![1]!.replace(/\/$/, '');
    rx = new SsfReceiver(issuer, rs.id, rs.secret!);
    await rx.connect();
  }, 60_000);

  afterAll(async () => {
    await rx?.close();
    child?.kill('SIGTERM');
    await new Promise((done) => (child?.exitCode !== null ? done(undefined) : child.once('exit', done)));
    store?.cleanup();
  });

  const waitFor = async <T>(fn: () => Promise<T | undefined>, what: string, ms = 10_000): Promise<T> => {
    const until = Date.now() + ms;
    for (;;) {
      const v = await fn();
      if (v !== undefined) return v;
      if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  it('discovers the transmitter: spec_version 1_0, both delivery methods, the management endpoints behind OAuth', () => {
    expect(rx.metadata).toMatchObject({ spec_version: '1_0', issuer, delivery_methods_supported: expect.arrayContaining([PUSH, POLL]) });
    for (const e of ['configuration_endpoint', 'status_endpoint', 'verification_endpoint', 'jwks_uri'] as const) expect(rx.metadata[e]).toMatch(/^http:\/\/127\.0\.0\.1/);
  });

  it('creates a push stream and a poll stream (201), lists them as an array, and gets 404 for a stream_id it has not', async () => {
    const endpoint = await rx.listen();
    const p = await rx.createStream({ delivery: { method: PUSH, endpoint_url: endpoint }, events_requested: [SESSION_REVOKED] });
    expect(p.status).toBe(201);
    push = p.body as StreamConfig;
    expect(push).toMatchObject({ iss: issuer, delivery: { method: PUSH, endpoint_url: endpoint }, events_requested: [SESSION_REVOKED], events_delivered: [SESSION_REVOKED] });
    expect(push.events_supported).toContain(SESSION_REVOKED);
    // signing_alg is tokenctl's member (docs/events.md): this stream asks for ES256 instead of RS256.
    const q = await rx.createStream({ delivery: { method: POLL }, events_requested: [SESSION_REVOKED], signing_alg: 'ES256' });
    expect(q.status).toBe(201);
    poll = q.body as StreamConfig;
    expect(poll.delivery.method).toBe(POLL);
    expect(poll.delivery.endpoint_url).toMatch(/^http:\/\//);
    const list = await rx.api('GET', rx.metadata.configuration_endpoint);
    expect(list.status).toBe(200);
    expect(Array.isArray(list.body)).toBe(true);
    expect((list.body as StreamConfig[]).map((s) => s.stream_id).sort()).toEqual([push.stream_id, poll.stream_id].sort());
    expect((await rx.api('GET', `${rx.metadata.configuration_endpoint}?stream_id=${push.stream_id}`)).body).toMatchObject({ stream_id: push.stream_id });
    expect((await rx.api('GET', `${rx.metadata.configuration_endpoint}?stream_id=no-such-stream`)).status).toBe(404);
    expect((await rx.api('GET', `${rx.metadata.status_endpoint}?stream_id=${push.stream_id}`)).body).toEqual({ stream_id: push.stream_id, status: 'enabled' });
    // The operator sees both among the receivers.
    const receivers = await store.json<{ id: string }[]>(['receiver', 'list']);
    expect(receivers.map((r) => r.id)).toEqual(expect.arrayContaining([push.stream_id, poll.stream_id]));
  });

  it('verifies each stream: the verification event arrives by push (RS256) and by poll (ES256), with its state', async () => {
    expect((await rx.verify(push.stream_id, 'push-state')).status).toBe(204);
    const pushed = await waitFor(async () => rx.pushed.find((s) => s.length > 0), 'the pushed verification SET');
    const v = await rx.verifySet(pushed, push.aud);
    expect(v.alg).toBe('RS256');
    expect(v.claims.events[VERIFICATION]).toEqual({ state: 'push-state' });
    expect(v.claims.sub_id).toEqual({ format: 'opaque', id: push.stream_id });
    rx.pushed.length = 0;

    expect((await rx.verify(poll.stream_id, 'poll-state')).status).toBe(204);
    const sets = await rx.poll(poll.delivery.endpoint_url!);
    const [jti, set] = Object.entries(sets)[0]!;
    const w = await rx.verifySet(set, poll.aud);
    expect(w.alg).toBe('ES256');
    expect(w.claims.jti).toBe(jti);
    expect(w.claims.events[VERIFICATION]).toEqual({ state: 'poll-state' });
    // Acknowledged, it is not answered again.
    expect(await rx.poll(poll.delivery.endpoint_url!, [jti])).toEqual({});
  });

  it('a session that ends is a session-revoked event, one event per SET, by push and by poll, signatures verified', async () => {
    const tokens = await issue(store, app.id, 'alice');
    // An access token alone ends no session: a stream of session-revoked gets nothing of it.
    expect((await store.run(['revoke', tokens.access_token])).code).toBe(0);
    expect((await store.run(['revoke', tokens.refresh_token])).code).toBe(0);
    const check = (v: VerifiedSet) => {
      expect(Object.keys(v.claims.events)).toEqual([SESSION_REVOKED]);
      const e = v.claims.events[SESSION_REVOKED]!;
      expect(typeof e.event_timestamp).toBe('number');
      expect(Math.abs((e.event_timestamp as number) - Date.now() / 1000)).toBeLessThan(120);
      expect((e.reason_admin as { en: string }).en.length).toBeGreaterThan(0);
      expect(typeof v.claims.txn).toBe('string');
      expect(v.claims.sub_id).toMatchObject({ format: 'complex', user: { format: 'opaque', id: 'alice' }, application: { format: 'opaque', id: app.id } });
    };
    const pushed = await waitFor(async () => rx.pushed[0], 'the pushed session-revoked SET');
    const p = await rx.verifySet(pushed, push.aud);
    expect(p.alg).toBe('RS256');
    check(p);
    expect(rx.pushed).toHaveLength(1);

    const sets = await waitFor(async () => {
      const s = await rx.poll(poll.delivery.endpoint_url!);
      return Object.keys(s).length > 0 ? s : undefined;
    }, 'the polled session-revoked SET');
    const entries = Object.entries(sets);
    expect(entries).toHaveLength(1);
    const q = await rx.verifySet(entries[0]![1], poll.aud);
    expect(q.alg).toBe('ES256');
    check(q);
    // The same originating change on both streams: one txn.
    expect(q.claims.txn).toBe(p.claims.txn);
    expect(await rx.poll(poll.delivery.endpoint_url!, [entries[0]![0]])).toEqual({});
  });

  it('updates, pauses and deletes its streams; a token without ssf.manage may not', async () => {
    const patched = await rx.api('PATCH', rx.metadata.configuration_endpoint, { stream_id: poll.stream_id, description: 'poll, renamed' });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ stream_id: poll.stream_id, description: 'poll, renamed', events_requested: [SESSION_REVOKED] });
    const status = await rx.api('POST', rx.metadata.status_endpoint, { stream_id: poll.stream_id, status: 'paused', reason: 'maintenance' });
    expect(status.body).toEqual({ stream_id: poll.stream_id, status: 'paused', reason: 'maintenance' });
    expect((await rx.api('DELETE', `${rx.metadata.configuration_endpoint}?stream_id=${push.stream_id}`)).status).toBe(204);
    expect((await rx.api('GET', `${rx.metadata.configuration_endpoint}?stream_id=${push.stream_id}`)).status).toBe(404);
    const anonymous = await fetch(rx.metadata.configuration_endpoint);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toMatch(/^Bearer /);
  });
});
