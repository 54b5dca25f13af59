import { afterEach, describe, expect, it } from 'vitest';
import { Readiness } from '../../src/http/readiness.js';
import { MemoryStore } from '../../src/store/memory/index.js';
import { StoreUnavailableError, type TokenStore } from '../../src/store/store.js';
import { answer, createClient, formAuth, issue, postForm, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Contract 6's health routes: liveness without the store, readiness as a read of the store asked
 * anew at each probe (no write, no memory of past faults), and not ready while draining.
 */

/** A store whose every method call is recorded, whose every call can be made to fail, and whose ping can hang. */
function watchedStore(): { store: TokenStore; calls: string[]; ping: { mode: 'ok' | 'fail' | 'hang' } } {
  const inner = new MemoryStore();
  const calls: string[] = [];
  const ping = { mode: 'ok' as 'ok' | 'fail' | 'hang' };
  const store = new Proxy(inner, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls.push(String(name));
        if (ping.mode === 'fail') return Promise.reject(new StoreUnavailableError('the store is unavailable: connection refused'));
        if (name === 'ping' && ping.mode === 'hang') return new Promise(() => undefined);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store, calls, ping };
}

describe('GET /health/live, /health/ready, /healthz', () => {
  let s: TestServer | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  const get = async (path: string, method = 'GET') => answer(await fetch(s!.url + path, { method }));

  it('live: 200 without a store call, also when the store is gone', async () => {
    const w = watchedStore();
    s = await startTestServer({ store: w.store });
    w.calls.length = 0;
    w.ping.mode = 'fail';
    const r = await get('/health/live');
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ status: 'ok' });
    expect(r.headers.get('cache-control')).toBe('no-store');
    expect(w.calls).toEqual([]);
    expect((await get('/health/live', 'HEAD')).status).toBe(200);
  });

  it.each(['/health/ready', '/healthz'])('%s: one read of the store per probe, never a write', async (path) => {
    const w = watchedStore();
    s = await startTestServer({ store: w.store });
    w.calls.length = 0;
    const r = await get(path);
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ status: 'ok' });
    expect(w.calls).toEqual(['ping']);
    expect((await get(path, 'HEAD')).status).toBe(200);
    expect(w.calls).toEqual(['ping', 'ping']);
  });

  it.each(['/health/ready', '/healthz'])('%s: 503 while the store fails, 200 with its first answer after (no memory of the fault)', async (path) => {
    const w = watchedStore();
    s = await startTestServer({ store: w.store });
    const web = await createClient(s.engine, 'web');
    const issued = await issue(s.engine, web);
    w.ping.mode = 'fail';
    const down = await get(path);
    expect(down.status).toBe(503);
    expect(down.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(down.json).toMatchObject({ status: 503, error: 'Service Unavailable', path });
    // A request that met the fault leaves nothing behind either.
    expect((await postForm(s.url, '/oauth/introspection', { token: issued.access_token, ...formAuth(web) })).status).toBe(503);
    w.ping.mode = 'ok';
    expect((await get(path)).status).toBe(200);
  });

  it('ready: 503 when the store does not answer within the readiness timeout', async () => {
    const w = watchedStore();
    s = await startTestServer({ store: w.store, readiness: new Readiness(w.store, 100) });
    w.ping.mode = 'hang';
    const started = Date.now();
    const r = await get('/health/ready');
    expect(r.status).toBe(503);
    expect(r.json.message).toMatch(/did not answer/);
    expect(Date.now() - started).toBeLessThan(2_000);
    w.ping.mode = 'ok';
    expect((await get('/health/ready')).status).toBe(200);
  });

  it('draining: ready 503 at once while live and the endpoints still answer, each answer closing its connection', async () => {
    const w = watchedStore();
    const readiness = new Readiness(w.store);
    s = await startTestServer({ store: w.store, readiness });
    const web = await createClient(s.engine, 'web');
    const issued = await issue(s.engine, web);
    expect((await get('/health/ready')).headers.get('connection')).not.toBe('close');
    readiness.drain();
    w.calls.length = 0;
    const ready = await get('/health/ready');
    expect(ready.status).toBe(503);
    expect(ready.json.message).toMatch(/shutting down/);
    expect(w.calls).toEqual([]); // draining is known without asking the store
    expect((await get('/healthz')).status).toBe(503);
    expect((await get('/health/live')).status).toBe(200);
    const introspected = await postForm(s.url, '/oauth/introspection', { token: issued.access_token, ...formAuth(web) });
    expect(introspected.status).toBe(200);
    expect(introspected.json.active).toBe(true);
    expect(introspected.headers.get('connection')).toBe('close');
  });

  it('other methods: 405 with Allow: GET, HEAD', async () => {
    s = await startTestServer();
    for (const path of ['/health/live', '/health/ready']) {
      const r = await get(path, 'POST');
      expect(r.status).toBe(405);
      expect(r.headers.get('allow')).toBe('GET, HEAD');
    }
  });
});
