import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/memory/index.js';
import type { TokenStore } from '../../src/store/store.js';
import { createClient, DOORS, formAuth, issue, specBasic, startTestServer, type Client, type TestServer } from '../helpers/server.js';

/**
 * A request's deadline (serve: --db-timeout + 1 s): whatever the store does, even never answer,
 * every endpoint answers 503 with Retry-After by then, over both doors.
 */
describe.each(DOORS)('a store that never answers, through the %s', (door) => {
  const hang = { on: false };
  let s: TestServer;
  let web: Client;
  let tokens: { access_token: string; refresh_token: string };

  beforeAll(async () => {
    const inner = new MemoryStore();
    const store = new Proxy(inner, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver) as unknown;
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => (hang.on ? new Promise(() => undefined) : (value as (...a: unknown[]) => unknown).apply(target, args));
      },
    }) as TokenStore;
    s = await startTestServer({ store, door, requestDeadlineMs: 200 });
    web = await createClient(s.engine, 'web');
    tokens = await issue(s.engine, web);
    hang.on = true;
  });
  afterAll(async () => {
    hang.on = false;
    await s?.close();
  });

  it.each([
    ['/oauth/introspection', () => ({ token: tokens.access_token, ...formAuth(web) }), {}],
    ['/oauth/revocation', () => ({ token: tokens.access_token, ...formAuth(web) }), {}],
    ['/oauth/token', () => ({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token }), 'spec'],
  ] as const)('%s: 503 with Retry-After at the deadline, in its own error shape', async (path, form, auth) => {
    const started = Date.now();
    const r = await s.post(path, form(), auth === 'spec' ? { authorization: specBasic(web) } : {});
    const ms = Date.now() - started;
    expect(r.status).toBe(503);
    expect(r.headers.get('retry-after')).toMatch(/^\d+$/);
    if (path === '/oauth/token') expect(r.json).toEqual({ error: 'temporarily_unavailable', error_description: expect.stringMatching(/did not answer in time/) });
    else expect(r.json).toMatchObject({ status: 503, error: 'Service Unavailable', path });
    expect(ms).toBeGreaterThanOrEqual(190);
    expect(ms).toBeLessThan(1_500);
  });
});
