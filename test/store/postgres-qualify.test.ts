import { describe, expect, it } from 'vitest';
import { Qualifier, STORE_TABLES, qualifyTables } from '../../src/store/postgres/qualify.js';
import { INSERT_TOKENS, LIST_AUDIT, PURGE_BATCH, REVOKE_GRANT, STATS, listTokensQuery, revocableQuery, MINT_ACCESS, ROTATE, LOCK_REVOKED_GRANT, bulkGrantBatch } from '../../src/store/postgres/statements.js';
import { PG_SKIP_MESSAGE, PG_URL, openTestStore } from '../helpers/pg.js';
import { describeStoreContract } from './contract.js';
import { describeEventStoreContract } from './events-contract.js';

/**
 * The PostgreSQL store keeps no search_path on its connections (PgBouncer in transaction mode
 * would refuse it or leak it): the layer that runs statements qualifies the store's table names
 * with its schema. Here: what is qualified and what is not, and the whole store contract run
 * with the connections' search_path pointing at a schema that does not exist, where any table
 * reference left bare fails and any column or alias wrongly qualified fails too.
 */

const q = (sql: string) => qualifyTables(sql, 'ts');
/** How many references were qualified. */
const qualified = (sql: string) => (q(sql).match(/"ts"\./g) ?? []).length;

describe('qualifyTables', () => {
  it('qualifies table references after FROM, JOIN, INTO, UPDATE and USING', () => {
    expect(q('SELECT jti FROM tokens WHERE digest = $1')).toBe('SELECT jti FROM "ts".tokens WHERE digest = $1');
    expect(q('INSERT INTO audit (at) VALUES ($1)')).toBe('INSERT INTO "ts".audit (at) VALUES ($1)');
    expect(q('UPDATE tokens SET revoked_at = $1')).toBe('UPDATE "ts".tokens SET revoked_at = $1');
    expect(q('delete from Tokens t using grants g where g.grant_id = t.grant_id')).toBe(
      'delete from "ts".Tokens t using "ts".grants g where g.grant_id = t.grant_id',
    );
    expect(q('SELECT 1 FROM tokens t JOIN clients c ON c.id = t.client_id LEFT JOIN grants g USING (grant_id)')).toBe(
      'SELECT 1 FROM "ts".tokens t JOIN "ts".clients c ON c.id = t.client_id LEFT JOIN "ts".grants g USING (grant_id)',
    );
    expect(q('SELECT 1 FROM tokens t, clients c WHERE t.client_id = c.id')).toBe('SELECT 1 FROM "ts".tokens t, "ts".clients c WHERE t.client_id = c.id');
    expect(q('SELECT value FROM tokenctl_meta; INSERT INTO migrations (version) VALUES (3)')).toBe(
      'SELECT value FROM "ts".tokenctl_meta; INSERT INTO "ts".migrations (version) VALUES (3)',
    );
  });

  it('leaves columns, aliases, quoted names, literals, comments, parameters and qualified names alone', () => {
    const sql = `SELECT grant_id AS "grantId", tokens.jti, 'FROM tokens' AS note, E'it\\'s FROM audit', $x$ FROM clients $x$,
        (SELECT count(*) FROM clients) AS clients, "tokens" -- FROM grants
      FROM other.tokens /* JOIN audit */ WHERE $1::text IS NULL, a, tokens`;
    expect(q(sql)).toBe(sql.replace('FROM clients) AS', 'FROM "ts".clients) AS'));
  });

  it('leaves the names a statement defines for itself (WITH … AS) alone', () => {
    expect(q('WITH grants AS (SELECT grant_id FROM tokens), x (a) AS MATERIALIZED (SELECT 1) SELECT * FROM grants, x')).toBe(
      'WITH grants AS (SELECT grant_id FROM "ts".tokens), x (a) AS MATERIALIZED (SELECT 1) SELECT * FROM grants, x',
    );
  });

  it('does not read a comma outside a FROM list as one', () => {
    expect(q('SELECT a, tokens FROM clients WHERE x IN (1, 2) ORDER BY a, tokens')).toBe('SELECT a, tokens FROM "ts".clients WHERE x IN (1, 2) ORDER BY a, tokens');
    expect(q('SELECT extract(epoch FROM t), tokens FROM audit')).toBe('SELECT extract(epoch FROM t), tokens FROM "ts".audit');
  });

  it('qualifies each reference of the store’s shared statements', () => {
    expect(qualified(INSERT_TOKENS)).toBe(2); // the grants it creates, the tokens
    expect(qualified(MINT_ACCESS)).toBe(4); // the grant lock, the refresh token, the grant's recent tokens, the insert
    expect(qualified(ROTATE)).toBe(3);
    expect(qualified(LOCK_REVOKED_GRANT)).toBe(1);
    expect(qualified(bulkGrantBatch({ username: 'alice' }, 1, 10, null).sql)).toBe(2);
    expect(q(ROTATE)).toContain('SELECT 1 FROM g'); // a CTE's name stays as it is
    expect(qualified(PURGE_BATCH)).toBe(4);
    // The tokens, the audit line, and the event: security_events, event_deliveries, receivers twice (event-writes.ts).
    expect(qualified(REVOKE_GRANT)).toBe(6);
    expect(q(REVOKE_GRANT)).toContain('CROSS JOIN "ts".receivers rc');
    expect(qualified(STATS)).toBe(3);
    expect(q(STATS)).toContain('AS clients'); // the column alias, unqualified
    expect(qualified(LIST_AUDIT)).toBe(1);
    expect(qualified(revocableQuery({ username: 'alice' }, 1).sql)).toBe(2);
    expect(qualified(listTokensQuery({ clientId: 'c', state: 'active' }).sql)).toBe(1);
    // Only the store's own tables, never anything else.
    for (const sql of [INSERT_TOKENS, PURGE_BATCH, STATS, LIST_AUDIT, MINT_ACCESS, ROTATE]) {
      for (const m of q(sql).matchAll(/"ts"\.(\w+)/g)) expect(STORE_TABLES).toContain(m[1]);
    }
  });

  it('quotes the schema, and remembers each statement', () => {
    expect(qualifyTables('SELECT 1 FROM audit', 'a"b')).toBe('SELECT 1 FROM "a""b".audit');
    const qualifier = new Qualifier('ts');
    const first = qualifier.qualify(REVOKE_GRANT);
    expect(qualifier.qualify(REVOKE_GRANT)).toBe(first);
    expect(first).toBe(q(REVOKE_GRANT));
  });
});

if (!PG_URL) {
  console.warn(PG_SKIP_MESSAGE);
  it.skip(PG_SKIP_MESSAGE, () => undefined);
}

describe.skipIf(!PG_URL)('PostgresStore without a search_path to its schema', () => {
  const url = PG_URL ?? '';
  // The connections' own search_path names a schema that does not exist: a table name that
  // reached the server unqualified fails with "relation does not exist".
  const elsewhere = `${url}${url.includes('?') ? '&' : '?'}options=${encodeURIComponent('-c search_path=tokenctl_nowhere')}`;
  describeStoreContract('PostgresStore, every statement qualified', () => openTestStore(elsewhere));
  describeEventStoreContract('PostgresStore, every statement qualified', () => openTestStore(elsewhere));
});
