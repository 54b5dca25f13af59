import { createServer } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { streamJson, streamSettingsOf } from '../../src/engine/stream-settings.js';
import { MemoryStore } from '../../src/store/memory/index.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import type { TokenStore } from '../../src/store/store.js';
import { openTestStore, PG_SKIP_MESSAGE, PG_URL } from '../helpers/pg.js';
import { createClient, issue, startTestServer, type TestServer, type TestServerOptions } from '../helpers/server.js';

const PUSH = 'urn:ietf:rfc:8935';
const POLL = 'urn:ietf:rfc:8936';
const VERIFICATION = 'https://schemas.openid.net/secevent/ssf/event-type/verification';

type Backend = [string, () => Promise<{ store: TokenStore; cleanup: () => Promise<void> }>];
const backends: Backend[] = [
  ['memory', async () => ({ store: new MemoryStore(), cleanup: async () => undefined })],
  [
    'SQLite',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'tokenctl-ssf-disabled-'));
      const store = await SqliteStore.open(join(dir, 'tokens.db'));
      return { store, cleanup: async () => (await store.close().catch(() => undefined), rmSync(dir, { recursive: true, force: true })) };
    },
  ],
  ...(PG_URL !== undefined ? [['PostgreSQL', () => openTestStore(PG_URL!)] as Backend] : []),
];

if (PG_URL === undefined) it.skip(`a verification on a disabled stream on PostgreSQL: ${PG_SKIP_MESSAGE}`, () => {});

/** The `state` of each verification SET among `sets` (compact JWS), in order. */
const verificationStates = (sets: string[]) => sets.map((set) => (JSON.parse(Buffer.from(set.split('.')[1]!, 'base64url').toString()) as { events: Record<string, { state?: string }> }).events[VERIFICATION]?.state);

/** SSF 1.0 §8.1.2.1 and §8.1.4.2 through the server: a disabled stream neither sends nor keeps a verification event. */
describe.each(backends)('a verification on a disabled stream, on %s', (_name, open) => {
  let s: TestServer | undefined;
  let cleanup: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await s?.close();
    await cleanup?.();
    s = undefined;
    cleanup = undefined;
  });

  const setUp = async (options: TestServerOptions = {}) => {
    const opened = await open();
    cleanup = opened.cleanup;
    s = await startTestServer({ ...options, store: opened.store });
    const rs = await createClient(s.engine, 'rs', { scope: 'ssf.manage' });
    const t = (await issue(s.engine, rs, { scope: 'ssf.manage' })).access_token;
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(s!.url + path, { method, headers: { authorization: `Bearer ${t}`, 'content-type': 'application/json' }, body: JSON.stringify(body ?? {}) });
      const text = await res.text();
      return { status: res.status, body: text === '' ? undefined : (JSON.parse(text) as Record<string, unknown>), retryAfter: res.headers.get('retry-after') };
    };
    const status = async (id: string, to: string) => expect((await call('POST', '/ssf/status', { stream_id: id, status: to })).body).toMatchObject({ status: to });
    const poll = async () => Object.values(((await call('POST', '/events/poll', { returnImmediately: true })).body as { sets: Record<string, string> }).sets);
    return { call, status, poll };
  };

  it('a poll stream: refused 400 naming the way out, nothing kept or counted; one held before the disable is dropped', async () => {
    const { call, status, poll } = await setUp();
    const id = (await call('POST', '/ssf/stream', { delivery: { method: POLL } })).body!.stream_id as string;

    await status(id, 'disabled');
    const refused = await call('POST', '/ssf/verify', { stream_id: id, state: 'while-disabled' });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ error: 'invalid_input' });
    expect(refused.body!.error_description).toMatch(/is disabled/);
    expect(refused.body!.error_description).toContain('POST /ssf/status');
    expect(refused.retryAfter).toBeNull();
    expect(await poll()).toEqual([]);
    // Nothing was written: enabled again, nothing is answered, and a request at once is no 429.
    await status(id, 'enabled');
    expect(await poll()).toEqual([]);
    expect((await call('POST', '/ssf/verify', { stream_id: id, state: 'enabled' })).status).toBe(204);

    // Held for the next poll, then the stream is disabled: dropped, not answered now nor after.
    await status(id, 'disabled');
    expect(await poll()).toEqual([]);
    await status(id, 'enabled');
    expect(await poll()).toEqual([]);
    s!.clock.advance(15_000);
    expect((await call('POST', '/ssf/verify', { stream_id: id, state: 'again' })).status).toBe(204);
    expect(verificationStates(await poll())).toEqual(['again']);
  });

  it('a poll stream whose settings kept a verification when it was disabled (written before this rule): no poll answers it, and it is cleared', async () => {
    const { call, status, poll } = await setUp();
    const id = (await call('POST', '/ssf/stream', { delivery: { method: POLL } })).body!.stream_id as string;
    const settings = streamSettingsOf((await s!.store.getReceiver(id))!.stream);
    const kept = streamJson({ ...settings, status: 'disabled', verification: { jti: 'b4c1b7a0-0000-7000-8000-000000000001', state: 'old', at: s!.clock.now() } });
    expect(await s!.store.updateReceiver(id, { stream: kept }, {})).toBe(true);
    expect(await poll()).toEqual([]);
    expect(streamSettingsOf((await s!.store.getReceiver(id))!.stream).verification).toBeUndefined();
    await status(id, 'enabled');
    expect(await poll()).toEqual([]);
  });

  it('a push stream: refused 400, nothing pushed; paused with one held, then disabled: dropped', async () => {
    const received: string[] = [];
    const rx = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8').on('data', (d: string) => (body += d));
      req.on('end', () => (received.push(body), res.writeHead(202).end()));
    });
    await new Promise<void>((listening) => rx.listen(0, '127.0.0.1', listening));
    try {
      const { call, status } = await setUp({ ssfPrivateNetwork: true });
      const endpoint = `http://127.0.0.1:${(rx.address() as AddressInfo).port}/events`;
      const id = (await call('POST', '/ssf/stream', { delivery: { method: PUSH, endpoint_url: endpoint } })).body!.stream_id as string;
      const arrived = async (n: number, ms: number) => {
        for (const until = Date.now() + ms; received.length < n && Date.now() < until; ) await new Promise((r) => setTimeout(r, 20));
        return received.length >= n;
      };

      await status(id, 'disabled');
      const refused = await call('POST', '/ssf/verify', { stream_id: id, state: 'while-disabled' });
      expect(refused.status).toBe(400);
      expect(refused.body!.error_description).toContain('POST /ssf/status');

      await status(id, 'paused');
      expect((await call('POST', '/ssf/verify', { stream_id: id, state: 'while-paused' })).status).toBe(204);
      await status(id, 'disabled');
      expect(streamSettingsOf((await s!.store.getReceiver(id))!.stream).verification).toBeUndefined();
      await status(id, 'enabled');
      s!.clock.advance(15_000);
      expect((await call('POST', '/ssf/verify', { stream_id: id, state: 'while-enabled' })).status).toBe(204);
      expect(await arrived(1, 5_000)).toBe(true);
      // The last one only: had either earlier request gone out, it would have been sent before it.
      expect(verificationStates(received)).toEqual(['while-enabled']);
    } finally {
      rx.closeAllConnections();
      await new Promise((closed) => rx.close(closed));
    }
  });
});
