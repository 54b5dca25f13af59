import { describe, expect, it } from 'vitest';
import { hostListOf } from '../../src/store/postgres/hosts.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { dropSchema, testSchemaName } from '../helpers/pg.js';

/** Multi-host store locations (src/store/postgres/hosts.ts), as libpq reads them. */

describe('hostListOf', () => {
  it('leaves a one-host URL to pg', () => {
    expect(hostListOf('postgres://u@db:5432/auth?schema=t')).toBeUndefined();
  });

  it('reads every host, in order, and keeps the rest of the URL for each', () => {
    const list = hostListOf('postgres://u:pw@10.0.0.1:5441,db2,[::1]:5443/auth?target_session_attrs=read-write&schema=t');
    expect(list?.hosts).toEqual([
      { host: '10.0.0.1', port: 5441 },
      { host: 'db2', port: 5432 },
      { host: '::1', port: 5443 },
    ]);
    expect(list?.firstUrl).toBe('postgres://u:pw@10.0.0.1:5441/auth?schema=t');
  });

  it('refuses several hosts without a writable target_session_attrs', () => {
    expect(() => hostListOf('postgres://a,b/auth')).toThrow(/target_session_attrs=read-write/);
    expect(() => hostListOf('postgres://a,b/auth?target_session_attrs=any')).toThrow(/not target_session_attrs=any/);
    expect(hostListOf('postgres://a,b/auth?target_session_attrs=primary')?.hosts).toHaveLength(2);
  });
});

const FAILOVER = process.env.TOKENCTL_TEST_PG_FAILOVER;
const SKIP = 'multi-host store test skipped: set TOKENCTL_TEST_PG_FAILOVER=primary-url,standby-url (.ci/pg-replicas.sh)';
if (!FAILOVER) {
  console.warn(SKIP);
  it.skip(SKIP, () => undefined);
}

describe.skipIf(!FAILOVER)('a store on a primary and its standby', () => {
  it('writes to the writable host whichever is listed first', async () => {
    const [primary, standby] = (FAILOVER ?? ',').split(',').map((u) => new URL(u));
    const schema = testSchemaName();
    // The standby first: the store must pass it over for the primary.
    const url = `postgres://${primary!.username}@${standby!.host},${primary!.host}${primary!.pathname}?target_session_attrs=read-write&schema=${schema}`;
    const store = await PostgresStore.open(url);
    try {
      await store.createClient(
        { id: 'c1', name: 'c1', secretHash: null, scope: '', orgId: 'o', audience: 'a', accessTtlMs: null, refreshTtlMs: null, createdAt: 1, secretUpdatedAt: 1, redirectUris: [], grantTypes: ['refresh_token'], loginProvider: false },
        {},
      );
      expect((await store.getClient('c1'))?.name).toBe('c1');
    } finally {
      await store.close();
      await dropSchema(primary!.toString(), schema);
    }
  }, 30_000);
});
