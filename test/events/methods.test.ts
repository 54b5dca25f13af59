import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JWKS_PATH, POLL_PATH, SSF_CONFIGURATION_PATH, SSF_STATUS_PATH, SSF_VERIFY_PATH } from '../../src/http/paths.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The event routes answer a method they do not take as every other path does: 405 with the
 * `Allow` header naming the ones they take (http/paths.ts), not a 404 as if they did not exist.
 */
describe('the security event paths and their methods', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(() => s?.close());

  it.each([
    [POLL_PATH, 'GET', 'POST'],
    [POLL_PATH, 'PUT', 'POST'],
    [JWKS_PATH, 'POST', 'GET, HEAD'],
    [SSF_CONFIGURATION_PATH, 'DELETE', 'GET, HEAD'],
    [SSF_VERIFY_PATH, 'GET', 'POST'],
    [SSF_STATUS_PATH, 'DELETE', 'GET, HEAD, POST'],
  ])('%s %s: 405, Allow: %s', async (path, method, allow) => {
    const r = await fetch(s.url + path, { method });
    expect(r.status).toBe(405);
    expect(r.headers.get('allow')).toBe(allow);
  });

  it('the methods they take are answered (not 405)', async () => {
    expect((await fetch(s.url + JWKS_PATH)).status).toBe(200);
    expect((await fetch(s.url + SSF_CONFIGURATION_PATH)).status).toBe(200);
    expect((await fetch(s.url + POLL_PATH, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status).toBe(401);
  });
});
