import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROTATION_RACE_WINDOW_MS } from '../../src/engine/context.js';
import { createClient, issue, issueInThePast, rotateInThePast, tempStore, type TempStore } from '../helpers/cli.js';
import { startServe, stopServe, type ServeProcess } from '../helpers/load.js';
import { allSettled, revocationsOf, subjectOf, TestReceiver, verifySets } from './receiver.js';

/**
 * End to end on SQLite: a real `tokenctl serve` process pushes SETs (RFC 8935) to a real HTTPS
 * receiver. Every kind of revocation, from HTTP and from the CLI, yields exactly one verified
 * SET; a server killed (SIGKILL) between the revocation and the delivery delivers it after its
 * restart. (A receiver down for a minute, the retries' backoff, is test/events/deliverer.test.ts,
 * on a manual clock.)
 */
const AUTH = 'Bearer receiver-credential-for-tests';

interface Setup {
  store: TempStore;
  receiver: TestReceiver;
  serve: ServeProcess;
}

async function setUp(serveArgs: string[] = []): Promise<Setup> {
  const store = tempStore({ inProcess: true });
  const receiver = await TestReceiver.start(store.dir);
  const added = await store.run(['receiver', 'add', 'gw', '--push', receiver.url, '--allow-private-network', '--ca', receiver.caFile, '--authorization-env', 'RS_AUTH', '--json'], { env: { RS_AUTH: AUTH } });
  expect(added.code, added.stderr).toBe(0);
  const serve = await startServe(['--db', store.db, '--log-level', 'warn', '--rotate-refresh-tokens', ...serveArgs], { processGroup: serveArgs.includes('--workers') });
  return { store, receiver, serve };
}

async function tearDown(s: Setup | undefined): Promise<void> {
  if (!s) return;
  await stopServe(s.serve).catch(() => undefined);
  await s.receiver.down();
  s.store.cleanup();
}

/** A server and a receiver for the describe block it is called in: `s.current`. */
function withSetup(serveArgs: string[] = []): { current: Setup } {
  const holder = {} as { current: Setup };
  beforeAll(async () => {
    holder.current = await setUp(serveArgs);
  });
  afterAll(() => tearDown(holder.current));
  return holder;
}

async function post(url: string, form: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form).toString(), signal: AbortSignal.timeout(10_000) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}


describe('push to a real HTTPS receiver, SQLite', () => {
  const s = withSetup(['--metrics-port', '0']);

  it('every kind of revocation, from HTTP and the CLI, yields exactly one verified SET of one revocation', async () => {
    const { store, receiver, serve } = s.current;
    const app = await createClient(store);
    const other = await createClient(store);
    const doomed = await createClient(store);
    const auth = { client_id: app.id, client_secret: app.secret! };
    const expected: { sub: string; scope: string; reason: string }[] = [];

    const t1 = await issue(store, app.id, 'alice');
    expect((await post(`${serve.url}/oauth/revocation`, { ...auth, token: t1.access_token })).status).toBe(200);
    expected.push({ sub: t1.jti, scope: 'token', reason: 'revoked' });

    const t2 = await issue(store, app.id, 'alice');
    expect((await post(`${serve.url}/oauth/revocation`, { ...auth, token: t2.refresh_token })).status).toBe(200);
    expected.push({ sub: '', scope: 'grant', reason: 'revoked' });

    const t3 = await issue(store, app.id, 'carol');
    expect((await store.run(['revoke', t3.access_token, '--json'])).code).toBe(0);
    expected.push({ sub: t3.jti, scope: 'token', reason: 'revoked' });

    const t4 = await issue(store, app.id, 'dave');
    expect((await store.run(['revoke', '--jti', t4.jti, '--yes', '--json'])).code).toBe(0);
    expected.push({ sub: t4.jti, scope: 'token', reason: 'revoked' });

    await issue(store, app.id, 'bob');
    await issue(store, app.id, 'bob');
    expect((await store.run(['revoke', '--user', 'bob', '--yes', '--json'])).code).toBe(0);
    expected.push({ sub: 'bob', scope: 'user', reason: 'revoked' });

    await issue(store, other.id, 'erin');
    expect((await store.run(['revoke', '--client', other.id, '--yes', '--json'])).code).toBe(0);
    expected.push({ sub: other.id, scope: 'client', reason: 'revoked' });

    await issue(store, doomed.id, 'frank');
    expect((await store.run(['client', 'delete', doomed.id, '--yes', '--json'])).code).toBe(0);
    expected.push({ sub: doomed.id, scope: 'client', reason: 'client_deleted' });

    // Reuse: a replaced refresh token presented again, past the rotation race window (2 s): it
    // was replaced that long ago, so the test need not wait the window out.
    const t5 = await issueInThePast(store, app.id, 'gina', 2 * ROTATION_RACE_WINDOW_MS + 1_000);
    await rotateInThePast(store, t5.refresh_token, ROTATION_RACE_WINDOW_MS + 1_000);
    expect((await post(`${serve.url}/oauth/token`, { ...auth, grant_type: 'refresh_token', refresh_token: t5.refresh_token })).status).toBe(401);
    expected.push({ sub: '', scope: 'grant', reason: 'reuse_detected' });

    await receiver.waitFor(expected.length, 20_000);
    // Nothing more comes.
    await allSettled(() => store.json(['receiver', 'list']));
    expect(receiver.accepted).toHaveLength(expected.length);
    expect(receiver.duplicates()).toBe(0);
    for (const a of receiver.accepted) {
      expect(a.authorization).toBe(AUTH);
      expect(a.contentType).toBe('application/secevent+jwt');
    }
    const claims = await verifySets(serve.url, receiver.accepted);
    const revocations = revocationsOf(claims); // and each SET's toe and sub_id checked
    expect(claims.map((c) => c.events['urn:tokenctl:secevent:tokens-revoked'].revocations.length)).toEqual(expected.map(() => 1));
    // `reason` is left out when it is `revoked` (docs/events.md): a receiver reads it so.
    expect(revocations.map((r) => ({ scope: r.scope, reason: r.reason ?? 'revoked' }))).toEqual(expected.map(({ scope, reason }) => ({ scope, reason })));
    expect(revocations.filter((r) => 'reason' in r && r.reason === 'revoked')).toEqual([]);
    revocations.forEach((r, i) => {
      if (expected[i]!.sub !== '') expect(subjectOf(r)).toBe(expected[i]!.sub);
    });
    claims.forEach((c) => {
      expect(c.aud).toBe(new URL(receiver.url).origin);
      expect(c.iss).toBe(serve.url);
    });
    expect(revocations[1]!).toMatchObject({ scope: 'grant', jti: expect.any(String), grant_id: expect.any(String), username: 'alice', client_id: app.id, token_type: 'refresh_token' });
    expect(claims[1]!.sub_id.id).toBe(revocations[1]!.grant_id);
    expect(revocations[4]!).toEqual({ scope: 'user', username: 'bob', at: expect.any(Number) });
    expect(revocations[7]!).toMatchObject({ username: 'gina', client_id: app.id });
    const listed = await store.json<{ pending: number; dead: number; last_delivered_at: number | null }[]>(['receiver', 'list']);
    expect(listed[0]).toMatchObject({ pending: 0, dead: 0, last_delivered_at: expect.any(Number) });
    const metricsUrl = /metrics on (http:\/\/\S+)/.exec(serve.stderr() + serve.stdout())![1]!;
    const scrape = await (await fetch(metricsUrl)).text();
    expect(scrape).toMatch(new RegExp(`^tokenctl_event_deliveries_total\\{outcome="delivered"\\} ${expected.length}$`, 'm'));
  });
});

describe('serve --workers 2', () => {
  const s = withSetup(['--workers', '2']);

  it('both workers run a deliverer; each event goes out once', async () => {
    const { store, receiver, serve } = s.current;
    const app = await createClient(store);
    const tokens = await store.json<{ access_token: string; jti: string }[]>(['token', 'issue', '--client', app.id, '--user', 'alice', '--count', '20']);
    // Sequential revocations over new connections: the workers share them.
    for (const t of tokens) {
      const res = await fetch(`${serve.url}/oauth/revocation`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', connection: 'close' }, body: new URLSearchParams({ client_id: app.id, client_secret: app.secret!, token: t.access_token }).toString() });
      expect(res.status).toBe(200);
    }
    await receiver.waitFor(tokens.length, 20_000);
    await allSettled(() => store.json(['receiver', 'list']));
    expect(receiver.duplicates()).toBe(0);
    // SETs are started in event order, but up to 4 are in flight and may arrive in any order
    // (docs/events.md, "Grouping, SETs in flight and order"; deliverer.test.ts checks the start order).
    const arrived = revocationsOf(await verifySets(serve.url, receiver.accepted)).map((r) => r.jti);
    expect([...arrived].sort()).toEqual(tokens.map((t) => t.jti).sort());
  });
});

describe('a crash between the revocation and the delivery', () => {
  const s = withSetup();

  it('the server is killed (SIGKILL) while the receiver answers 503; after a restart the event arrives', async () => {
    const { store, receiver } = s.current;
    const app = await createClient(store);
    receiver.unavailable = true;
    const t = await issue(store, app.id, 'alice');
    expect((await store.run(['revoke', t.access_token, '--json'])).code).toBe(0);
    const until = Date.now() + 10_000;
    while (receiver.refused === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    expect(receiver.refused).toBeGreaterThan(0);
    // The failed attempt is recorded (a retry due in about a second): now the server dies.
    while (Date.now() < until && (await store.json<{ last_error: string | null }[]>(['receiver', 'list']))[0]!.last_error === null) await new Promise((r) => setTimeout(r, 20));
    await s.current.serve.kill('SIGKILL');
    receiver.unavailable = false;
    expect(receiver.accepted).toHaveLength(0);
    s.current.serve = await startServe(['--db', store.db, '--log-level', 'warn']);
    // Its retry is due within seconds (had it died holding a lease mid-push: within the 30 s lease).
    await receiver.waitFor(1, 40_000);
    const claims = await verifySets(s.current.serve.url, receiver.accepted);
    expect(revocationsOf(claims).map((r) => r.jti)).toEqual([t.jti]);
    expect(claims[0]!.sub_id.id).toBe(t.jti);
    const listed = await store.json<{ pending: number; last_error: string | null }[]>(['receiver', 'list']);
    expect(listed[0]).toMatchObject({ pending: 0, last_error: 'HTTP 503' });
  }, 60_000);
});
