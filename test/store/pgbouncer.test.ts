import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { StoreUnavailableError } from '../../src/store/store.js';
import { PG_URL, dropSchema, openTestStore, testSchemaName, withPg } from '../helpers/pg.js';
import { PGBOUNCER, PGBOUNCER_SKIP_MESSAGE, startPgBouncer, type PgBouncer, type PoolMode } from '../helpers/pgbouncer.js';
import { T0, makeClient, makeGrant } from '../helpers/records.js';
import { describeStoreContract } from './contract.js';
import { describeEventStoreContract } from './events-contract.js';

/**
 * The PostgreSQL store through a stock PgBouncer (Debian's, no special settings), in
 * transaction mode, where consecutive transactions of one client connection run on whichever
 * server connection is free, and in session mode. The whole store contract, and what broke
 * before: startup parameters refused ("unsupported startup parameter: statement_timeout"), and
 * `?schema=` ignored once they were.
 */

const enabled = PG_URL !== undefined && PGBOUNCER !== undefined;
if (!enabled) {
  console.warn(PGBOUNCER_SKIP_MESSAGE);
  it.skip(PGBOUNCER_SKIP_MESSAGE, () => undefined);
}

const tablesIn = (schema: string) =>
  withPg(PG_URL ?? '', undefined, async (db) =>
    (await db.query<{ t: string }>('SELECT tablename AS t FROM pg_tables WHERE schemaname = $1 ORDER BY 1', [schema])).rows.map((r) => r.t),
  );

for (const mode of ['transaction', 'session'] as PoolMode[]) {
  describe.skipIf(!enabled)(`PostgresStore through PgBouncer in ${mode} mode`, () => {
    let bouncer: PgBouncer;
    // Few server connections for many client ones: transaction mode has to share them out.
    beforeAll(async () => {
      bouncer = await startPgBouncer(PG_URL ?? '', mode, mode === 'transaction' ? 3 : 20);
    });
    afterAll(async () => {
      await bouncer?.stop();
    });

    describeStoreContract(`PostgresStore via PgBouncer (${mode})`, () => openTestStore(bouncer.url));
    describeEventStoreContract(`PostgresStore via PgBouncer (${mode})`, () => openTestStore(bouncer.url));

    it('opens with ?schema=, keeps every table in that schema, and nothing in public', async () => {
      const schema = testSchemaName();
      const store = await PostgresStore.open(`${bouncer.url}${bouncer.url.includes('?') ? '&' : '?'}schema=${schema}`);
      try {
        await store.createClient(makeClient({ id: 'client-1' }), {});
        const { refresh, access } = makeGrant({ clientId: 'client-1' });
        await store.insertTokens([refresh, access]);
        expect(await store.revokeToken(refresh.jti, T0 + 1, true, {})).toBe(true);
        expect((await store.findTokenByJti(access.jti))?.revokedAt).toBe(T0 + 1);
        expect(await tablesIn(schema)).toEqual([
          'audit', 'authorizations', 'clients', 'dpop_proofs', 'event_deliveries', 'grants', 'migrations', 'receiver_leases', 'receivers', 'security_events', 'signing_keys', 'tokenctl_meta', 'tokens',
        ]);
        expect(await tablesIn('public')).not.toContain('tokens');
        expect(bouncer.log()).not.toMatch(/unsupported startup parameter/);
      } finally {
        await store.close();
        await dropSchema(PG_URL ?? '', schema);
      }
    });
  });
}

describe.skipIf(!enabled)('PgBouncer in transaction mode, as tokenctl met it before', () => {
  let bouncer: PgBouncer;
  beforeAll(async () => {
    bouncer = await startPgBouncer(PG_URL ?? '', 'transaction');
  });
  afterAll(async () => {
    await bouncer?.stop();
  });

  it('refuses a connection that sends a session setting at startup: what the store no longer does', async () => {
    const client = new pg.Client({ connectionString: bouncer.url, statement_timeout: 1_000 });
    client.on('error', () => undefined);
    await expect(client.connect()).rejects.toThrow(/unsupported startup parameter: statement_timeout/);
    await client.end().catch(() => undefined);
  });

  it('names what PgBouncer refused when a URL still carries a startup option', async () => {
    const url = `${bouncer.url}${bouncer.url.includes('?') ? '&' : '?'}options=${encodeURIComponent('-c search_path=x')}`;
    const error = await PostgresStore.open(url, { schema: testSchemaName() }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as Error).message).toMatch(/unavailable: connection failure: unsupported startup parameter: options/);
  });

  it("runs the store's reused statements although PgBouncer cannot keep them: named at first, then unnamed", async () => {
    // Debian's PgBouncer (1.18) does not track prepared statements: a transaction of a client
    // connection that prepared one lands on a server connection without it (26000), or one
    // prepares a name another client's already holds there (42P05). Two server connections for twelve.
    const few = await startPgBouncer(PG_URL ?? '', 'transaction', 2);
    const { store, cleanup } = await openTestStore(few.url, { poolSize: 12 });
    try {
      await store.createClient(makeClient({ id: 'client-1' }), {});
      const grants = Array.from({ length: 120 }, (_, i) => makeGrant({ clientId: 'client-1', grantId: `grant-${i}` }));
      await store.insertTokens(grants.flatMap((g) => [g.refresh, g.access]));
      const audit = (target: string) => ({ at: T0, actor: 'test', action: 'token.revoke', target, count: 1, detail: 'access_token' });
      // Rounds of reads and access-token revocations at once: batched, on every client connection.
      for (let round = 0; round < 6; round++) {
        const mine = grants.slice(round * 20, round * 20 + 20);
        const found = await Promise.all(mine.map((g) => store.findClientAndToken('client-1', g.access.digest)));
        expect(found.map((f) => f.token?.jti)).toEqual(mine.map((g) => g.access.jti));
        const revoked = await Promise.all(mine.map((g) => store.revokeToken(g.access.jti, T0 + round, false, { audit: audit(g.access.jti) })));
        expect(revoked.every(Boolean)).toBe(true);
        // New server connections, without the statements the client connections prepared.
        if (round % 2 === 0) await few.reconnect();
      }
      for (const g of grants) expect((await store.findTokenByJti(g.access.jti))?.revokedAt).not.toBeNull();
      expect(await store.listAudit({})).toHaveLength(120);
    } finally {
      await cleanup();
      await few.stop();
    }
  });

  it('shares few server connections among many store connections without mixing their transactions', async () => {
    const { store, cleanup } = await openTestStore(bouncer.url, { poolSize: 12 });
    try {
      await store.createClient(makeClient({ id: 'client-1' }), {});
      const grants = Array.from({ length: 40 }, (_, i) => makeGrant({ clientId: 'client-1', grantId: `grant-${i}` }));
      await Promise.all(grants.map((g) => store.insertTokens([g.refresh, g.access])));
      // Forty transactions at once (revocation with its grant cascade and audit), on 12 client connections.
      const revoked = await Promise.all(
        grants.map((g, i) => store.revokeToken(g.refresh.jti, T0 + i, true, { audit: { at: T0, actor: 'test', action: 'revoke', target: g.refresh.jti, count: 2, detail: '' } })),
      );
      expect(revoked.every(Boolean)).toBe(true);
      for (const g of grants) expect((await store.findTokenByJti(g.access.jti))?.revokedAt).not.toBeNull();
      expect(await store.listAudit({})).toHaveLength(40);
    } finally {
      await cleanup();
    }
  });
});
