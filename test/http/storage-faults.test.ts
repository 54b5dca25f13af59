import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { tempDir } from '../helpers/load.js';
import { createClient, formAuth, issue, postForm, specBasic, startTestServer, type Client, type TestServer } from '../helpers/server.js';

/**
 * Hardening item 7 of SECURITY.md: a storage fault is a 503 with Retry-After (never a 500), and
 * readiness answers what the store answers now: it reads, never writes, and remembers no fault
 * (contract 6), so it stays 200 while reads work. Real SQLite faults on a real store file: `PRAGMA query_only` makes every write
 * fail with SQLITE_READONLY, as a read-only file or mount does; `PRAGMA max_page_count` makes a
 * write that needs a new page fail with SQLITE_FULL, as a full disk does.
 */

describe('storage faults on an SQLite store', () => {
  const tmp = tempDir('tokenctl-faults-');
  let s: TestServer;
  let store: SqliteStore;
  let web: Client;
  const pragma = (text: string): unknown => (store as unknown as { db: { pragma(t: string, o?: object): unknown } }).db.pragma(text, { simple: true });

  beforeAll(async () => {
    store = await SqliteStore.open(join(tmp.dir, 'tokens.db'));
    s = await startTestServer({ store });
    web = await createClient(s.engine, 'web');
  });
  afterAll(async () => {
    await s?.close();
    await store?.close();
    tmp.cleanup();
  });

  async function health(): Promise<number> {
    return (await fetch(s.url + '/health/ready')).status;
  }

  it('a read-only store: readiness 200 (it only reads, so it writes nothing on a probe)', async () => {
    expect(await health()).toBe(200);
    pragma('query_only = ON');
    try {
      expect(await health()).toBe(200);
    } finally {
      pragma('query_only = OFF');
    }
  });

  it('a revocation on a read-only store: 503 with Retry-After in the spec 7.2 record, over both doors', async () => {
    const issued = await issue(s.engine, web);
    pragma('query_only = ON');
    try {
      const r = await postForm(s.url, '/oauth/revocation', { token: issued.access_token, token_type_hint: 'access_token', ...formAuth(web) });
      expect(r.status).toBe(503);
      expect(r.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(r.json).toMatchObject({ status: 503, error: 'Service Unavailable', path: '/oauth/revocation' });
      // fastify's door (chunked body: not the fast path) answers the same.
      const chunked = await s.app.inject({
        method: 'POST',
        url: '/oauth/revocation',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'transfer-encoding': 'chunked' },
        payload: new URLSearchParams({ token: issued.access_token, token_type_hint: 'access_token', client_id: web.id, client_secret: web.secret! }).toString(),
      });
      expect(chunked.statusCode).toBe(503);
      expect(chunked.headers['retry-after']).toMatch(/^\d+$/);
    } finally {
      pragma('query_only = OFF');
    }
    // No memory of the fault: the store answers, so the node is ready.
    expect(await health()).toBe(200);
  });

  it('a full disk: a refresh gets 503 with Retry-After, not 500; readiness stays 200 while reads work', async () => {
    const issued = await issue(s.engine, web);
    const pages = pragma('page_count') as number;
    pragma(`max_page_count = ${pages}`);
    try {
      // Enough new access tokens that one needs a page the store may not add.
      let last = 0;
      let retryAfter: string | null = null;
      for (let i = 0; i < 500 && last !== 503; i++) {
        const r = await postForm(s.url, '/oauth/token', { grant_type: 'refresh_token', refresh_token: issued.refresh_token }, { authorization: specBasic(web) });
        last = r.status;
        retryAfter = r.headers.get('retry-after');
        if (last === 503) expect(r.json).toEqual({ error: 'temporarily_unavailable', error_description: expect.any(String) });
        else expect(last).toBe(200);
      }
      expect(last).toBe(503);
      expect(retryAfter).toMatch(/^\d+$/);
      expect(await health()).toBe(200);
    } finally {
      pragma('max_page_count = 1073741823');
    }
  });
});
