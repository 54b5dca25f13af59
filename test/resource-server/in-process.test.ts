import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/engine/clock.js';
import { ResourceServer } from '../../src/resource-server/index.js';
import { createClient, issue, postForm, rfcBasic, startTestServer, type Client, type TestServer } from '../helpers/server.js';

/**
 * The module against tokenctl's real HTTP stack and transmitter (introspection, RFC 8936 poll,
 * JWKS, SETs) in this process, on the in-memory store: every revocation kind the engine has is
 * refused within 1 s with a 10-minute cache, and a valid token is served from the cache. The same
 * against real `serve` processes on SQLite, with kills: e2e.test.ts.
 */
let server: TestServer;
let rs: ResourceServer;
let rsClient: Client;
let app: Client;
let other: Client;

beforeEach(async () => {
  server = await startTestServer({ clock: new ManualClock(Date.now()), rotateRefreshTokens: true, rotationRaceWindowMs: 0 });
  rsClient = await createClient(server.engine, 'rs');
  app = await createClient(server.engine, 'app');
  other = await createClient(server.engine, 'other');
  await server.engine.addReceiver({ id: 'rs-poll', delivery: 'poll', clientId: 'rs', audience: 'rs' }, 'test');
  rs = new ResourceServer({ url: server.url, clientId: rsClient.id, clientSecret: rsClient.secret!, audience: 'rs', accept: { audience: 'https://api.example.test' }, cache: { maxAgeMs: 10 * 60_000 } });
  await rs.ready();
});
afterEach(async () => {
  await rs.close();
  await server.close();
});

async function refusedWithin(token: string, ms: number): Promise<number> {
  const start = Date.now();
  while ((await rs.verify(token)) !== null) {
    if (Date.now() - start > ms) throw new Error(`still accepted after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
  return Date.now() - start;
}

describe('resource server module against the in-process server', () => {
  it('serves a valid token from its cache: one introspection for a hundred requests', async () => {
    const t = await issue(server.engine, app);
    for (let i = 0; i < 100; i++) expect(await rs.verify(t.access_token)).toMatchObject({ username: 'alice', clientId: 'app' });
    expect(rs.stats()).toMatchObject({ introspections: 1, hits: 99 });
  });

  const kinds: [string, (tokens: { access: string; refresh: string; jti: string }) => Promise<unknown>][] = [
    ['the access token, by its client over HTTP', ({ access }) => postForm(server.url, '/oauth/revocation', { token: access }, { authorization: rfcBasic(app) })],
    ['the refresh token (its grant), by the operator', ({ refresh }) => server.engine.revokeAsOperator(refresh, 'test')],
    ['--jti', ({ jti }) => server.engine.revokeBulk({ jti }, 'test')],
    ['--user', () => server.engine.revokeBulk({ username: 'alice' }, 'test')],
    ['--user at a client', () => server.engine.revokeBulk({ username: 'alice', clientId: 'app' }, 'test')],
    ['--client', () => server.engine.revokeBulk({ clientId: 'app' }, 'test')],
    ['client deletion', () => server.engine.deleteClient('app', 'test')],
    [
      'refresh token reuse',
      async ({ refresh }) => {
        await server.engine.refreshAsOperator(refresh);
        server.clock.advance(1000);
        await server.engine.refreshAsOperator(refresh).catch(() => undefined);
      },
    ],
  ];

  it.each(kinds)('refuses a cached token within 1 s of its revocation: %s', async (_kind, revoke) => {
    const t = await issue(server.engine, app);
    const bystander = await issue(server.engine, other, { username: 'bob' });
    expect(await rs.verify(t.access_token)).not.toBeNull();
    expect(await rs.verify(bystander.access_token)).not.toBeNull();
    await revoke({ access: t.access_token, refresh: t.refresh_token!, jti: t.jti });
    const ms = await refusedWithin(t.access_token, 1000);
    expect(ms).toBeLessThan(1000);
    expect(rs.stats().events).toBeGreaterThan(0); // by its event, not by the fallback
    const before = rs.stats().introspections;
    expect(await rs.verify(bystander.access_token)).not.toBeNull(); // still cached: events drop only what they cover
    expect(rs.stats().introspections).toBe(before);
  });
});
