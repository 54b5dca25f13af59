import { createLocalJWKSet, jwtVerify } from 'jose';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/memory/index.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { TOKENS_REVOKED } from '../../src/events/set.js';
import { createClient, issue, ISSUER, rfcBasic, startTestServer, type TestServer } from '../helpers/server.js';
import { GroupingMemoryStore } from './grouping-store.js';
import { describePoll } from './poll-suite.js';

/** RFC 8936 poll over the in-memory store and SQLite (PostgreSQL: poll-postgres.test.ts). */
describePoll([
  {
    name: 'memory',
    async open() {
      const store = new MemoryStore();
      return { store, cleanup: () => store.close().catch(() => undefined) };
    },
  },
  {
    name: 'sqlite',
    async open() {
      const dir = mkdtempSync(join(tmpdir(), 'tokenctl-poll-'));
      const store = await SqliteStore.open(join(dir, 'tokens.db'));
      return {
        store,
        async cleanup() {
          await store.close().catch(() => undefined);
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  },
]);

describe('a store that puts several events in one delivery', () => {
  let grouped: TestServer;
  afterEach(async () => {
    await grouped.close();
  });

  it('answers one SET per delivery, carrying every revocation of it, oldest first; its ack settles them all', async () => {
    grouped = await startTestServer({ store: new GroupingMemoryStore(3) });
    const receiverClient = await createClient(grouped.engine, 'rs-1');
    await grouped.engine.addReceiver({ id: 'rs-poll', delivery: 'poll', clientId: receiverClient.id, audience: 'https://rs.example.test' }, 'test');
    const app = await createClient(grouped.engine, 'app');
    const jtis: string[] = [];
    for (let i = 0; i < 5; i++) {
      const t = await issue(grouped.engine, app, { username: `u${i}` });
      await grouped.engine.revokeAsOperator(t.access_token, 'test');
      jtis.push(t.jti);
    }
    const request = async (body: unknown) => {
      const res = await fetch(`${grouped.url}/events/poll`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: rfcBasic(receiverClient) }, body: JSON.stringify(body) });
      expect(res.status).toBe(200);
      return (await res.json()) as { sets: Record<string, string>; moreAvailable: boolean };
    };
    const first = await request({ returnImmediately: true, maxEvents: 1 });
    expect(Object.keys(first.sets)).toHaveLength(1);
    expect(first.moreAvailable).toBe(true);
    const all = await request({ returnImmediately: true });
    expect(all.moreAvailable).toBe(false);
    const keys = createLocalJWKSet((await (await fetch(`${grouped.url}/.well-known/jwks.json`)).json()) as { keys: [] });
    const claims = [];
    for (const [jti, set] of Object.entries(all.sets)) {
      const { payload } = await jwtVerify(set, keys, { issuer: ISSUER, audience: 'https://rs.example.test', typ: 'secevent+jwt' });
      expect(payload.jti).toBe(jti);
      claims.push(payload);
    }
    const lists = claims.map((c) => (c.events as Record<string, { revocations: { jti: string; at: number }[] }>)[TOKENS_REVOKED]!.revocations);
    expect(lists.map((l) => l.map((r) => r.jti))).toEqual([jtis.slice(0, 3), jtis.slice(3)]);
    for (const [i, c] of claims.entries()) {
      // Several revocations: the subject is the SET's originating change, its txn.
      expect(c.sub_id).toEqual({ format: 'opaque', id: c.txn });
      expect(c.txn).toBe(c.jti);
      expect(c.toe).toBe(Math.floor(Math.max(...lists[i]!.map((r) => r.at)) / 1000));
    }
    expect((await request({ returnImmediately: true, ack: Object.keys(all.sets) })).sets).toEqual({});
    expect((await grouped.engine.listReceivers())[0]).toMatchObject({ pending: 0 });
  });
});

describe('pollAnswer', () => {
  it('is the JSON of the answer: its SETs signed where they go, any jti escaped as JSON does; verified by jose', async () => {
    const { pollAnswer } = await import('../../src/events/poll.js');
    const { SigningKeys } = await import('../../src/events/keys.js');
    const { setClaims } = await import('../../src/events/set.js');
    const store = new MemoryStore();
    const keys = new SigningKeys(store, () => Date.UTC(2026, 0, 1));
    await keys.ensureCurrent();
    const key = await keys.current();
    const now = Date.UTC(2026, 0, 1);
    const event = (id: string, i: number) => ({ id, at: now - 1000 + i, reason: 'revoked' as const, scope: 'user' as const, username: `ünï-${i}` });
    const deliveries = [
      { id: 'événement-1', events: [event('événement-1', 0)] },
      { id: 'quote"d', events: [event('q-1', 1), event('q-2', 2)] },
      // A big one: its base64url crosses the writer's pieces (48 KiB) at a length that is no multiple of 3.
      { id: 'big', events: Array.from({ length: 900 }, (_, i) => event(`b-${i}`, i)) },
    ];
    const { body, release } = pollAnswer(true, { deliveries, issuer: 'https://iss', audience: 'rs', key, now });
    const parsed = JSON.parse(body.toString('utf8')) as { sets: Record<string, string>; moreAvailable: boolean };
    expect(Object.keys(parsed.sets)).toEqual(deliveries.map((d) => d.id));
    expect(parsed.moreAvailable).toBe(true);
    const jwks = createLocalJWKSet(JSON.parse(JSON.stringify(await keys.jwks())));
    for (const d of deliveries) {
      const { payload } = await jwtVerify(parsed.sets[d.id]!, jwks, { issuer: 'https://iss', audience: 'rs', typ: 'secevent+jwt', currentDate: new Date(now) });
      expect(payload).toEqual(JSON.parse(JSON.stringify(setClaims(d, 'https://iss', 'rs', now))));
    }
    // Released, its memory serves the next answer: what that answer says is its own.
    release();
    release();
    const next = pollAnswer(false);
    expect(JSON.parse(next.body.toString('utf8'))).toEqual({ sets: {}, moreAvailable: false });
    expect(JSON.parse(pollAnswer(true).body.toString('utf8'))).toEqual({ sets: {}, moreAvailable: true });
    expect(JSON.parse(next.body.toString('utf8'))).toEqual({ sets: {}, moreAvailable: false });
  });
});
