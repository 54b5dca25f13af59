import { compactVerify, createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TokenStore } from '../../src/store/store.js';
import { TOKENS_REVOKED } from '../../src/events/set.js';
import { streamJson, streamSettingsOf } from '../../src/engine/stream-settings.js';
import { LONG_POLL_MS } from '../../src/events/poll.js';
import { createClient, issue, ISSUER, rfcBasic, startTestServer, type Client, type TestServer } from '../helpers/server.js';

/** A store to poll from, and what closes (and removes) it after each test. */
export interface PollStore {
  name: string;
  open(): Promise<{ store: TokenStore; cleanup(): Promise<void> }>;
}

/**
 * RFC 8936 poll, the JWKS and the SSF metadata on a real socket, over each store given:
 * authentication, 403 for a client that is no poll receiver, acks, moreAvailable, long poll.
 * poll.test.ts runs it on the in-memory store and SQLite, poll-postgres.test.ts on PostgreSQL.
 */
export function describePoll(stores: PollStore[]): void {
  describe.each(stores)('$name store', ({ name, open }) => {
    let server: TestServer;
    let rs: Client;
    let cleanup: () => Promise<void> = async () => undefined;
    beforeEach(async () => {
      const opened = await open();
      cleanup = opened.cleanup;
      server = await startTestServer({ store: opened.store });
      rs = await createClient(server.engine, 'rs-1');
      await server.engine.addReceiver({ id: 'rs-poll', delivery: 'poll', clientId: rs.id, audience: 'https://rs.example.test' }, 'test');
    });
    afterEach(async () => {
      await server.close();
      await cleanup();
    });

    async function pollRequest(body: unknown, authorization = rfcBasic(rs)): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }> {
      const res = await fetch(`${server.url}/events/poll`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization },
        body: JSON.stringify(body),
      });
      return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
    }

    async function jwks(): Promise<ReturnType<typeof createLocalJWKSet>> {
      const res = await fetch(`${server.url}/.well-known/jwks.json`);
      expect(res.status).toBe(200);
      return createLocalJWKSet((await res.json()) as { keys: [] });
    }

    async function revokeOne(username = 'alice'): Promise<string> {
      const client = (await server.store.getClient('app')) ? { id: 'app', secret: null } : await createClient(server.engine, 'app');
      const t = await issue(server.engine, client, { username });
      await server.engine.revokeAsOperator(t.access_token, 'test');
      return t.jti;
    }

    describe('POST /events/poll', () => {
      it('answers the pending SETs, verified with the served JWKS, and forgets them once acknowledged', async () => {
        const jti = await revokeOne();
        const first = await pollRequest({ returnImmediately: true });
        expect(first.status).toBe(200);
        expect(first.headers.get('cache-control')).toBe('no-store');
        const sets = first.body.sets as Record<string, string>;
        expect(Object.keys(sets)).toHaveLength(1);
        const [eventId, set] = Object.entries(sets)[0]!;
        expect(decodeProtectedHeader(set)).toMatchObject({ alg: 'ES256', typ: 'secevent+jwt' });
        const { payload } = await jwtVerify(set, await jwks(), { issuer: ISSUER, audience: 'https://rs.example.test', typ: 'secevent+jwt' });
        expect(payload).toMatchObject({
          jti: eventId,
          sub_id: { format: 'opaque', id: jti },
          events: { [TOKENS_REVOKED]: { revocations: [{ scope: 'token', jti, username: 'alice', client_id: 'app' }] } },
        });
        expect(typeof payload.toe).toBe('number');
        expect(first.body.moreAvailable).toBe(false);

        // Not acknowledged: answered again.
        expect(Object.keys((await pollRequest({ returnImmediately: true })).body.sets as object)).toEqual([eventId]);
        const acked = await pollRequest({ ack: [eventId], returnImmediately: true });
        expect(acked.body).toEqual({ sets: {}, moreAvailable: false });
        expect((await server.engine.listReceivers())[0]).toMatchObject({ pending: 0, last_delivered_at: expect.any(Number) });
      });

      it('answers in event order: one SET for consecutive commits where the store merges them (SQLite, PostgreSQL), acked as one; else moreAvailable past maxEvents', async () => {
        const jtis = [];
        for (let i = 0; i < 5; i++) jtis.push(await revokeOne(`u${i}`));
        const a = await pollRequest({ maxEvents: 3, returnImmediately: true });
        const keySet = await jwks();
        const claimsOf = async (sets: Record<string, string>) =>
          Promise.all(Object.values(sets).map(async (s) => JSON.parse(new TextDecoder().decode((await compactVerify(s, keySet)).payload))));
        const revoked = async (sets: Record<string, string>) =>
          (await claimsOf(sets)).flatMap((claims) => (claims.events[TOKENS_REVOKED].revocations as { jti: string }[]).map((r) => r.jti));
        if (name === 'sqlite' || name === 'postgres') {
          const ids = Object.keys(a.body.sets as object);
          expect(ids).toHaveLength(1);
          // SQLite: FIRST..LAST (commit order); PostgreSQL: FIRST~RUNS, the sequence numbers it carries.
          expect(ids[0]).toMatch(name === 'sqlite' ? /^[0-9a-f-]{36}\.\.[0-9a-f-]{36}$/ : /^[0-9a-f-]{36}~[0-9a-z]+\+5$/);
          // Several revocations: the SET's subject is its originating change, its txn (SSF §3.1, docs/events.md).
          expect((await claimsOf(a.body.sets as Record<string, string>)).map((c) => [c.sub_id, c.txn])).toEqual([[{ format: 'opaque', id: ids[0] }, ids[0]]]);
          expect(await revoked(a.body.sets as Record<string, string>)).toEqual(jtis);
          expect(a.body.moreAvailable).toBe(false);
          const b = await pollRequest({ returnImmediately: true, ack: ids });
          expect(b.body).toEqual({ sets: {}, moreAvailable: false });
          // A late second ack of the same SET takes nothing that came after it.
          const later = await revokeOne('u5');
          const c = await pollRequest({ returnImmediately: true, ack: ids });
          expect(await revoked(c.body.sets as Record<string, string>)).toEqual([later]);
          return;
        }
        expect(a.body.moreAvailable).toBe(true);
        const firstIds = Object.keys(a.body.sets as object);
        expect((await claimsOf(a.body.sets as Record<string, string>)).map((c) => c.sub_id.id)).toEqual(jtis.slice(0, 3));
        const b = await pollRequest({ maxEvents: 3, returnImmediately: true, ack: firstIds });
        expect(Object.keys(b.body.sets as object)).toHaveLength(2);
        expect(b.body.moreAvailable).toBe(false);
        // setErrs acknowledge too: the receiver has had its say on them.
        const [x, y] = Object.keys(b.body.sets as object);
        const c = await pollRequest({ maxEvents: 0, ack: [x], setErrs: { [y!]: { err: 'invalid_key', description: 'test' } } });
        expect(c.body).toEqual({ sets: {}, moreAvailable: false });
      });

      it('a paused stream (SSF §8.1.2) answers nothing and keeps its events; once enabled they are answered', async () => {
        const setStatus = async (status: 'paused' | 'enabled') => {
          const r = (await server.store.getReceiver('rs-poll'))!;
          expect(await server.store.updateReceiver('rs-poll', { endpointUrl: null, authorization: null, stream: streamJson({ ...streamSettingsOf(r.stream), status }) }, {})).toBe(true);
        };
        await setStatus('paused');
        const jti = await revokeOne();
        const held = await pollRequest({ returnImmediately: true });
        expect(held.body).toEqual({ sets: {}, moreAvailable: false });
        await setStatus('enabled');
        const answered = await pollRequest({ returnImmediately: true });
        const sets = Object.values(answered.body.sets as Record<string, string>);
        expect(sets).toHaveLength(1);
        expect(JSON.stringify(JSON.parse(Buffer.from(sets[0]!.split('.')[1]!, 'base64url').toString()))).toContain(jti);
      });

      it('a verification asked for on a paused stream is held like its events (SSF §8.1.2.1), answered first once enabled', async () => {
        const write = async (status: 'paused' | 'enabled') => {
          const r = (await server.store.getReceiver('rs-poll'))!;
          const verification = { jti: 'verify-1', state: 'asked-while-paused', at: Date.now() };
          expect(await server.store.updateReceiver('rs-poll', { stream: streamJson({ ...streamSettingsOf(r.stream), status, verification }) }, {})).toBe(true);
        };
        await write('paused');
        await revokeOne();
        expect((await pollRequest({ returnImmediately: true })).body).toEqual({ sets: {}, moreAvailable: false });
        // Not even "more available": nothing will be answered until the stream is enabled.
        expect((await pollRequest({ maxEvents: 0 })).body).toEqual({ sets: {}, moreAvailable: false });
        await write('enabled');
        const answered = await pollRequest({ returnImmediately: true });
        expect(Object.keys(answered.body.sets as object)).toEqual(['verify-1']);
        expect(answered.body.moreAvailable).toBe(true);
        const claims = JSON.parse(Buffer.from((answered.body.sets as Record<string, string>)['verify-1']!.split('.')[1]!, 'base64url').toString()) as { events: Record<string, { state?: string }> };
        expect(Object.values(claims.events)[0]!.state).toBe('asked-while-paused');
      });

      it('refuses a wrong secret (401), a client that is no poll receiver (403), and a bad body (400), as RFC 8935 error objects', async () => {
        const bad = await pollRequest({}, rfcBasic({ id: rs.id, secret: 'wrong-secret-wrong-secret' }));
        expect(bad.status).toBe(401);
        expect(bad.body.err).toBe('authentication_failed');
        const none = await fetch(`${server.url}/events/poll`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
        expect(none.status).toBe(401);
        const other = await createClient(server.engine, 'other');
        const denied = await pollRequest({ returnImmediately: true }, rfcBasic(other));
        expect(denied.status).toBe(403);
        expect(denied.body.err).toBe('access_denied');
        const badBody = await pollRequest({ maxEvents: 5000 });
        expect(badBody.status).toBe(400);
        expect(badBody.body.err).toBe('invalid_request');
        const notJson = await fetch(`${server.url}/events/poll`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: rfcBasic(rs) }, body: '{' });
        expect(notJson.status).toBe(400);
        expect(((await notJson.json()) as { err: string }).err).toBe('invalid_request');
      });

      it('says what is wrong with a body that is not a JSON poll request, in the poll\'s own terms; an empty body is {}', async () => {
        const send = async (body: string, contentType = 'application/json') => {
          const res = await fetch(`${server.url}/events/poll`, { method: 'POST', headers: { 'content-type': contentType, authorization: rfcBasic(rs) }, body });
          return { status: res.status, body: (await res.json()) as { err?: string; description?: string; sets?: object } };
        };
        const notJson = await send('not json');
        expect(notJson).toMatchObject({ status: 400, body: { err: 'invalid_request' } });
        expect(notJson.body.description).toMatch(/not valid JSON: send a JSON object/);
        const form = await send('ack=x', 'application/x-www-form-urlencoded');
        expect(form).toMatchObject({ status: 415, body: { err: 'invalid_request' } });
        expect(form.body.description).toMatch(/must be application\/json/);
        const large = await send(JSON.stringify({ ack: ['x'.repeat(70 * 1024)] }));
        expect(large).toMatchObject({ status: 413, body: { err: 'invalid_request', description: 'The poll request body is larger than 64 KiB' } });
        // An empty body is {}: a long poll, answered at once while an event is pending (not after 25 s of waiting).
        await revokeOne();
        const empty = await send('');
        expect(empty.status).toBe(200);
        const jtis = Object.keys(empty.body.sets ?? {});
        expect(jtis).toHaveLength(1);
        expect(await send(JSON.stringify({ ack: jtis, returnImmediately: true }))).toMatchObject({ status: 200, body: { sets: {} } });
      });

      it('long-polls: a revocation wakes a waiting poll long before its own end (the tight bound is a soak figure)', async () => {
        const started = Date.now();
        const waiting = pollRequest({});
        await new Promise((r) => setTimeout(r, 500));
        const revokedAt = Date.now();
        await revokeOne();
        const answer = await waiting;
        const woke = Date.now() - revokedAt;
        expect(Object.keys(answer.body.sets as object)).toHaveLength(1);
        expect(Date.now() - started).toBeGreaterThanOrEqual(500);
        // The poll looks again every LONG_POLL_CHECK_MS. The tight bound is a soak figure (a loaded
        // 2-core machine delays a timer by hundreds of ms); by default: woken, long before its own end.
        expect(woke).toBeLessThan(process.env.TOKENCTL_SOAK === '1' ? 400 : LONG_POLL_MS / 5);
      });

      it('a long poll ends when the server stops', async () => {
        const waiting = pollRequest({}).catch((e: unknown) => e);
        await new Promise((r) => setTimeout(r, 200));
        const t = Date.now();
        await server.app.close();
        await waiting;
        expect(Date.now() - t).toBeLessThan(2000);
      });
    });

    describe('JWKS, SSF metadata and stream', () => {
      it('publishes the current key, and the SSF transmitter metadata', async () => {
        const res = await fetch(`${server.url}/.well-known/jwks.json`);
        const body = (await res.json()) as { keys: Record<string, unknown>[] };
        expect(body.keys).toHaveLength(1);
        expect(body.keys[0]).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
        expect(body.keys[0]).not.toHaveProperty('d');
        const meta = (await (await fetch(`${server.url}/.well-known/ssf-configuration`)).json()) as Record<string, unknown>;
        expect(meta).toMatchObject({
          issuer: ISSUER,
          jwks_uri: `${ISSUER}/.well-known/jwks.json`,
          delivery_methods_supported: ['urn:ietf:rfc:8935', 'urn:ietf:rfc:8936'],
          spec_version: '1_0',
        });
      });

      it('GET /ssf/stream wants an access token (SSF management, RFC 6750): client credentials are refused with a Bearer challenge', async () => {
        const res = await fetch(`${server.url}/ssf/stream`, { headers: { authorization: rfcBasic(rs) } });
        expect(res.status).toBe(401);
        expect(res.headers.get('www-authenticate')).toMatch(/^Bearer realm="tokenctl", error="invalid_token"/);
      });
    });
  });
}
