import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { compactVerify, createLocalJWKSet } from 'jose';
import { ManualClock } from '../../src/engine/clock.js';
import { recordedEndpoint } from '../../src/engine/push-destination.js';
import { CLAIM_INTERVAL_MS, PushDeliverer, SET_MAX_REVOCATIONS } from '../../src/events/deliverer.js';
import { SigningKeys } from '../../src/events/keys.js';
import { TOKENS_REVOKED } from '../../src/events/set.js';
import { DEFAULT_RETENTION_MS } from '../../src/store/event-records.js';
import type { PostgresStore } from '../../src/store/postgres/store.js';
import type { ReceiverRecord, RevocationEvent } from '../../src/store/store.js';
import { PG_SKIP_MESSAGE, PG_URL, openTestStore, withPg } from '../helpers/pg.js';
import { makeClient, makeToken } from '../helpers/records.js';
import { ManualTimers } from '../helpers/timers.js';

/**
 * Push delivery on PostgreSQL (docs/events.md "Push"): a receiver's backlog goes out in few SETs,
 * every revocation exactly once and in the outbox's order, a receiver that is down is probed with
 * one revocation at a time, and a stalled receiver costs another nothing. A real PostgreSQL
 * store, the real push over HTTP to receivers on 127.0.0.1.
 */
if (!PG_URL) {
  console.warn(PG_SKIP_MESSAGE);
  it.skip(PG_SKIP_MESSAGE, () => undefined);
}

const T0 = Date.UTC(2026, 0, 1);
const CLIENT = 'client-push';

/** One request a receiver got: the SET's claims, and what it answered. */
interface Arrival {
  jti: string;
  revocations: string[];
  status: number;
}

/** A push receiver over plain HTTP on 127.0.0.1: answers each SET with `answer()` (a status, or never). */
class HttpReceiver {
  readonly arrivals: Arrival[] = [];
  answer: () => number | 'never' = () => 202;
  url = '';
  private server: Server | undefined;

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const set = Buffer.concat(chunks).toString('latin1');
        const claims = JSON.parse(Buffer.from(set.split('.')[1]!, 'base64url').toString('utf8'));
        const revocations = (claims.events[TOKENS_REVOKED].revocations as { jti: string }[]).map((r) => r.jti);
        const status = this.answer();
        this.arrivals.push({ jti: claims.jti, revocations, status: status === 'never' ? 0 : status });
        if (status !== 'never') res.writeHead(status).end();
        this.sets.push(set);
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/events`;
    return this;
  }

  /** Every SET as it came, to verify. */
  readonly sets: string[] = [];

  /** The revocations (token jtis) of the SETs it accepted, in arrival order. */
  accepted(): string[] {
    return this.arrivals.filter((a) => a.status >= 200 && a.status < 300).flatMap((a) => a.revocations);
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}

function pushReceiver(id: string, url: string): ReceiverRecord {
  return { id, delivery: 'push', endpointUrl: recordedEndpoint(new URL(url), true), authorization: null, caPem: null, clientId: null, audience: id, createdAt: T0, retentionMs: DEFAULT_RETENTION_MS };
}

describe.runIf(PG_URL)('push on PostgreSQL', () => {
  let store: PostgresStore;
  let schema: string;
  let cleanup: () => Promise<void>;
  const receivers: HttpReceiver[] = [];
  const deliverers: PushDeliverer[] = [];

  beforeAll(async () => {
    ({ store, schema, cleanup } = await openTestStore(PG_URL!));
    await store.createClient(makeClient({ id: CLIENT }), {});
  });
  afterEach(async () => {
    for (const r of receivers.splice(0)) await r.stop();
    for (const d of deliverers.splice(0)) await d.stop();
    for (const r of await store.listReceivers()) await store.deleteReceiver(r.id, {});
  });
  afterAll(async () => {
    await cleanup?.();
  });

  const receiver = async (): Promise<HttpReceiver> => {
    const r = await new HttpReceiver().start();
    receivers.push(r);
    return r;
  };

  /** `n` access tokens revoked, each with its event, as concurrent revocations are (batched, several per commit). Their jtis in the outbox's order. */
  const revoke = async (n: number, at: number): Promise<string[]> => {
    const tokens = Array.from({ length: n }, () => makeToken({ clientId: CLIENT }));
    await store.insertTokens(tokens);
    const results = await Promise.all(
      tokens.map((t) => {
        const event: RevocationEvent = { id: randomUUID(), at, reason: 'revoked', scope: 'token', jti: t.jti, tokenType: 'access_token', grantId: t.grantId, username: t.username, clientId: CLIENT };
        return store.revokeToken(t.jti, at, false, { event });
      }),
    );
    expect(results.every(Boolean)).toBe(true);
    return outboxOrder(new Set(tokens.map((t) => t.jti)));
  };

  /** Of these token jtis, those in the outbox, by event sequence: the order the docs promise a receiver. */
  const outboxOrder = (jtis: Set<string>): Promise<string[]> =>
    withPg(PG_URL!, schema, async (db) => (await db.query<{ jti: string }>("SELECT payload->>'jti' AS jti FROM security_events ORDER BY seq")).rows.map((r) => r.jti).filter((j) => jtis.has(j)));

  const deliverer = (options: Partial<ConstructorParameters<typeof PushDeliverer>[0]> = {}): PushDeliverer => {
    const clock = options.clock ?? new ManualClock(T0);
    const d = new PushDeliverer({ store, keys: new SigningKeys(store, () => clock.now()), issuer: () => 'https://issuer.example.test', clock, ...options });
    deliverers.push(d);
    return d;
  };

  /**
   * Every SET a contiguous run of the outbox, oldest first: put in order by their first
   * revocation, they make the outbox's order exactly, with nothing missing and nothing twice.
   */
  const expectRuns = (sets: string[][], order: string[]) => {
    const position = new Map(order.map((j, i) => [j, i]));
    const runs = [...sets].sort((a, b) => position.get(a[0]!)! - position.get(b[0]!)!);
    expect(runs.flat()).toEqual(order);
  };

  it('a backlog of 2,500 revocations goes out in 3 SETs, each revocation once, each SET a run of the outbox in order', async () => {
    const rs = await receiver();
    await store.createReceiver(pushReceiver('gw', rs.url), {});
    const order = await revoke(2_500, T0);
    expect(order).toHaveLength(2_500);
    const timers = new ManualTimers(new ManualClock(T0 + 1_000));
    const d = deliverer({ clock: timers.clock, timers });
    d.start();
    await timers.advance(CLAIM_INTERVAL_MS * 5);
    const accepted = rs.arrivals.filter((a) => a.status === 202);
    expect(accepted).toHaveLength(Math.ceil(2_500 / SET_MAX_REVOCATIONS));
    expect(accepted.map((a) => a.revocations.length).sort((a, b) => b - a)).toEqual([1_000, 1_000, 500]);
    // The first SET of a claim goes alone, before any other: it holds the oldest revocations.
    expect(accepted[0]!.revocations[0]).toBe(order[0]);
    expect(new Set(rs.accepted()).size).toBe(2_500);
    expect(rs.accepted()).toHaveLength(2_500);
    expectRuns(accepted.map((a) => a.revocations), order);
    // Each jti names its SET alone: the first and last event ids and a digest of all of them.
    expect(new Set(accepted.map((a) => a.jti)).size).toBe(accepted.length);
    for (const a of accepted) expect(a.jti).toMatch(/^[0-9a-f-]{36}\.\.[0-9a-f-]{36}\.[A-Za-z0-9_-]{12}$/);
    // Signed with the key the JWKS publishes.
    const jwks = createLocalJWKSet((await new SigningKeys(store, () => T0).jwks()) as Parameters<typeof createLocalJWKSet>[0]);
    for (const set of rs.sets) await compactVerify(set, jwks);
    expect((await store.listReceivers()).find((r) => r.id === 'gw')).toMatchObject({ pending: 0, dead: 0 });
  });

  it('a receiver down while a backlog grows is probed with one revocation a retry, and gets everything once when it is back', async () => {
    const rs = await receiver();
    rs.answer = () => 503;
    await store.createReceiver(pushReceiver('down', rs.url), {});
    const first = await revoke(1_500, T0);
    const timers = new ManualTimers(new ManualClock(T0 + 1_000));
    const d = deliverer({ clock: timers.clock, timers });
    d.start();
    await timers.advance(CLAIM_INTERVAL_MS);
    const later = await revoke(700, timers.clock.now());
    // Retries 1, 2, 4, 4, 4 s apart (±20 %): 15 s of a receiver that is down.
    await timers.advance(15_000);
    const refused = rs.arrivals.filter((a) => a.status === 503);
    // The first attempt a full SET; every retry after it a probe of the oldest revocation alone.
    expect(refused[0]!.revocations).toHaveLength(SET_MAX_REVOCATIONS);
    expect(refused.length).toBeGreaterThanOrEqual(4);
    for (const probe of refused.slice(1)) expect(probe.revocations).toEqual([first[0]]);
    rs.answer = () => 202;
    // Within one retry (4 s + 20 %) of coming back, everything arrives.
    await timers.advance(4_800 + CLAIM_INTERVAL_MS * 5);
    const order = await outboxOrder(new Set([...first, ...later]));
    const accepted = rs.arrivals.filter((a) => a.status === 202);
    expect(rs.accepted()).toHaveLength(2_200);
    expect(new Set(rs.accepted()).size).toBe(2_200);
    expect(accepted[0]!.revocations).toEqual([first[0]]);
    expect(accepted.length).toBeLessThanOrEqual(5);
    expectRuns(accepted.map((a) => a.revocations), order);
    expect((await store.listReceivers()).find((r) => r.id === 'down')).toMatchObject({ pending: 0, dead: 0 });
  });

  it('a stalled receiver does not delay another: the other gets each burst while the stalled one holds its first SET', async () => {
    const stalled = await receiver();
    stalled.answer = () => 'never';
    const good = await receiver();
    await store.createReceiver(pushReceiver('stalled', stalled.url), {});
    await store.createReceiver(pushReceiver('good', good.url), {});
    // Real timers: what is asserted is that no round waits for the stalled push.
    const d = deliverer({ clock: { now: () => Date.now() }, intervalMs: 20, pushTimeoutMs: 20_000 });
    d.start();
    const all: string[] = [];
    for (let burst = 0; burst < 3; burst++) {
      all.push(...(await revoke(300, Date.now())));
      await vi.waitFor(() => expect(good.accepted()).toHaveLength(all.length), { timeout: 10_000, interval: 10 });
    }
    expect(new Set(good.accepted()).size).toBe(900);
    expect(good.arrivals.length).toBeLessThan(900 / 10);
    // The stalled one got its first SET and nothing since: it has not answered it.
    expect(stalled.arrivals).toHaveLength(1);
    expect((await store.listReceivers()).find((r) => r.id === 'stalled')).toMatchObject({ pending: 900 });
    // Its connection closed, the stalled push fails and the deliverer can stop.
    await stalled.stop();
  });
});
