import { describe, expect, it } from 'vitest';
import { hostListOf } from '../../src/store/postgres/hosts.js';

/**
 * Multi-host store locations (src/store/postgres/hosts.ts), as libpq reads them. The store on a
 * real primary and standby is tested in test/e2e/pg-failover.test.ts, which owns that pair.
 */

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
