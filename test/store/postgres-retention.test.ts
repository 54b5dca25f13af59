import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/engine/clock.js';
import { Engine } from '../../src/engine/engine.js';
import type { PostgresStore } from '../../src/store/postgres/store.js';
import { insertGrantSeries, openTestStore, PG_SKIP_MESSAGE, PG_URL, withPg } from '../helpers/pg.js';
import { makeClient } from '../helpers/records.js';

/**
 * Retention on PostgreSQL, where grants are records of their own: `purge` deletes the grant
 * records no token is left in (those left by its own token batches, and those earlier purges
 * left behind), in batches that go on where the last stopped, and keeps every grant that still
 * has a token, expired ones included.
 */

if (!PG_URL) describe.skip('retention on PostgreSQL', () => it(PG_SKIP_MESSAGE, () => undefined));

describe.skipIf(!PG_URL)('retention on PostgreSQL: grant records', () => {
  const url = PG_URL ?? '';
  const T = Date.UTC(2026, 0, 1);
  let store: PostgresStore;
  let schema: string;
  let cleanup: () => Promise<void>;

  beforeAll(async () => {
    ({ store, schema, cleanup } = await openTestStore(url));
    await store.createClient(makeClient({ id: 'client-1' }), {});
    // 10 grants (a refresh and an access token each), valid for a day after T.
    await insertGrantSeries(url, schema, { grants: 10, clientId: 'client-1', username: 'u', issuedAt: T, prefix: 'r-' });
    await withPg(url, schema, async (db) => {
      // Grants 1–4: every token already gone (an earlier purge that left the grant behind).
      await db.query("DELETE FROM tokens WHERE grant_id IN ('r-grant-1', 'r-grant-2', 'r-grant-3', 'r-grant-4')");
      // Grants 5–6: revoked long ago, so this purge deletes their tokens, then the grants.
      await db.query("UPDATE tokens SET revoked_at = $1 WHERE grant_id IN ('r-grant-5', 'r-grant-6')", [T]);
      // Grant 7: its access token revoked, its refresh token still live: the grant stays.
      await db.query("UPDATE tokens SET revoked_at = $1 WHERE grant_id = 'r-grant-7' AND type = 'access_token'", [T]);
    });
  });
  afterAll(async () => cleanup?.());

  const grants = async (): Promise<string[]> =>
    withPg(url, schema, async (db) => (await db.query<{ grant_id: string }>('SELECT grant_id FROM grants ORDER BY grant_id')).rows.map((r) => r.grant_id));

  it('deletes the grants with no token left, in batches, and keeps every grant that has one', async () => {
    const clock = new ManualClock(T + 12 * 3_600_000); // every token still unexpired
    const engine = new Engine({ store, clock });
    const r = await engine.purge({ olderThanMs: 0, batchSize: 3 }, 'cli:op');
    expect(r.deleted).toBe(5); // grant 5's and 6's two tokens, grant 7's access token
    expect(r.grants_deleted).toBe(6);
    expect(await grants()).toEqual(['r-grant-10', 'r-grant-7', 'r-grant-8', 'r-grant-9']);
    const lines = (await store.listAudit({})).filter((e) => e.action === 'purge.grants');
    expect(lines.reduce((n, e) => n + e.count, 0)).toBe(6);
    expect(lines.length).toBeGreaterThan(1); // more than one batch of 3 grants looked at
  });

  it('a grant whose tokens have expired but are not yet purged stays, and goes with them', async () => {
    const engine = new Engine({ store, clock: new ManualClock(T + 2 * 86_400_000) }); // every token expired
    expect((await engine.purge({ olderThanMs: 86_400_000 + 3_600_000, batchSize: 3 }, 'cli:op')).grants_deleted).toBe(0);
    expect(await grants()).toHaveLength(4);
    const r = await engine.purge({ olderThanMs: 0, batchSize: 3 }, 'cli:op');
    expect(r.grants_deleted).toBe(4);
    expect(await grants()).toEqual([]);
  });
});
