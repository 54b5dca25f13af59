import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ResourceServer } from '../../src/resource-server/index.js';
import { createClient, issue, sleep, tempStore, type TempStore } from '../helpers/cli.js';
import { developmentTls, freePort, startServe, type ServeProcess } from './serve-process.js';

/**
 * RFC 8935 push into the module: a real `serve` pushes each SET to `rs.pushHandler()` (on
 * http://127.0.0.1, which `receiver add --push --allow-private-network` allows for development), with the receiver's
 * Authorization; the module verifies it, answers 202 and drops what it covers. A request without
 * the Authorization, or a body that is no valid SET, is refused with the RFC 8935 error.
 */
let store: TempStore;
let serve: ServeProcess;
let rs: ResourceServer;
let endpoint: Server;
let url: string;

beforeAll(async () => {
  store = tempStore();
  const tls = await developmentTls();
  const rsClient = await createClient(store);
  const port = await freePort();
  url = `http://127.0.0.1:${port}/events`;
  writeFileSync(join(store.dir, 'push-auth'), 'Bearer push-credential-for-the-test', { mode: 0o600 });
  await store.json(['receiver', 'add', 'rs-push', '--push', url, '--allow-private-network', '--authorization-file', join(store.dir, 'push-auth'), '--audience', 'rs-push']);
  serve = startServe(store.db, tls, await freePort());
  await serve.up;
  rs = new ResourceServer({ url: serve.url, ca: tls.ca, clientId: rsClient.id, clientSecret: rsClient.secret!, events: 'push', audience: 'rs-push', accept: { audience: 'rs-push' }, pushAuthorization: 'Bearer push-credential-for-the-test', cache: { maxAgeMs: 600_000 } });
  endpoint = createServer(rs.pushHandler());
  await new Promise<void>((r) => endpoint.listen(port, '127.0.0.1', r));
}, 60_000);

afterAll(async () => {
  endpoint?.close();
  await rs?.close();
  await serve?.stop();
  store?.cleanup();
});

describe('push (RFC 8935) into the module', () => {
  it('refuses a cached token within 1 s of its revocation by the CLI, by the pushed SET', async () => {
    const app = await createClient(store, ['--audience', 'rs-push']);
    const t = await issue(store, app.id, 'alice');
    expect(await rs.verify(t.access_token)).not.toBeNull();
    await store.json(['revoke', t.access_token]);
    const start = Date.now();
    while ((await rs.verify(t.access_token)) !== null) {
      expect(Date.now() - start).toBeLessThan(1000);
      await sleep(10);
    }
    expect(rs.stats()).toMatchObject({ events: 1, dropped: 1, introspections: 2 });
    await expect.poll(async () => (await store.json<{ id: string; pending: number }[]>(['receiver', 'list'])).find((r) => r.id === 'rs-push')?.pending, { timeout: 5000 }).toBe(0);
  }, 30_000);

  it('answers 401 without the receiver Authorization, 400 with the RFC 8935 error for a body that is no SET', async () => {
    const post = (headers: Record<string, string>, body: string) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/secevent+jwt', ...headers }, body });
    expect((await post({}, 'x.y.z')).status).toBe(401);
    const bad = await post({ authorization: 'Bearer push-credential-for-the-test' }, 'not-a-jws');
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ err: 'invalid_request' });
  });
});
