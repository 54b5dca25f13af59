import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { budgetWarning, readConnectionBudget, type ConnectionBudget } from '../../src/store/postgres/budget.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { DEFAULT_POOL_SIZE } from '../../src/store/postgres/pool.js';
import { PG_SKIP_MESSAGE, PG_URL, dropSchema, testSchemaName, withPg } from '../helpers/pg.js';
import { PGBOUNCER, startPgBouncer, type PgBouncer } from '../helpers/pgbouncer.js';

/**
 * The connection budget (docs/scale-out.md): `serve` warns at start when its pools would bring
 * PostgreSQL near max_connections, and a CLI command holds at most two connections, so that
 * an operator still gets in when the nodes' pools are full.
 */

const stock: ConnectionBudget = { maxConnections: 100, reserved: 3, inUse: 1, tokenctl: 1, behindPooler: false };
const URL_WITH_PASSWORD = 'postgres://ops:hunter2@db.example:5432/tokens';

describe('budgetWarning', () => {
  it('stays quiet for 10 nodes at the default pool of 8 on a stock server, with operators beside them', () => {
    // Nine nodes already hold their whole pools, and two operators run commands: the tenth starts.
    const nine = { ...stock, inUse: 1 + 9 * 8 + 2 * DEFAULT_POOL_SIZE, tokenctl: 1 + 9 * 8 + 2 * DEFAULT_POOL_SIZE };
    expect(budgetWarning(nine, 8, URL_WITH_PASSWORD)).toBeUndefined();
  });

  it('warns when the pools would pass 90% of what is usable, naming the figures, never the password', () => {
    const warning = budgetWarning({ ...stock, inUse: 51, tokenctl: 31 }, 40, URL_WITH_PASSWORD);
    expect(warning).toContain('50 connections open now (30 of them tokenctl');
    expect(warning).toContain('up to 40 more, 90 of the 97 usable (max_connections 100, 3 reserved)');
    expect(warning).toMatch(/--pool-size.*PgBouncer.*max_connections/);
    expect(warning).not.toContain('hunter2');
    // The tenth node at the old default of 10: the server is all but full.
    expect(budgetWarning({ ...stock, inUse: 1 + 9 * 10 }, 10, URL_WITH_PASSWORD)).toBeDefined();
    // An eleventh node at the default of 8.
    expect(budgetWarning({ ...stock, inUse: 1 + 10 * 8 }, 8, URL_WITH_PASSWORD)).toBeDefined();
  });

  it('behind a pooler, judges only the server connections open (the pools are the pooler’s clients)', () => {
    expect(budgetWarning({ ...stock, inUse: 30, behindPooler: true }, 500, URL_WITH_PASSWORD)).toBeUndefined();
    expect(budgetWarning({ ...stock, inUse: 92, behindPooler: true }, 1, URL_WITH_PASSWORD)).toMatch(/92 of its 97 usable connections/);
  });
});

if (!PG_URL) {
  console.warn(PG_SKIP_MESSAGE);
  it.skip(PG_SKIP_MESSAGE, () => undefined);
}

describe.skipIf(!PG_URL)('the connection budget on PostgreSQL', () => {
  const url = PG_URL ?? '';
  let bouncer: PgBouncer | undefined;
  beforeAll(async () => {
    if (PGBOUNCER) bouncer = await startPgBouncer(url, 'transaction');
  });
  afterAll(async () => {
    await bouncer?.stop();
  });

  it('reads max_connections, the reserved connections and the connections open', async () => {
    const budget = await readConnectionBudget(url);
    const expected = await withPg(url, undefined, async (db) => (await db.query<{ m: string; r: string }>(
      "SELECT current_setting('max_connections') AS m, current_setting('superuser_reserved_connections') AS r")).rows[0]);
    expect(budget.maxConnections).toBe(Number(expected?.m));
    expect(budget.reserved).toBeGreaterThanOrEqual(Number(expected?.r));
    expect(budget.inUse).toBeGreaterThanOrEqual(1);
    expect(budget.tokenctl).toBeGreaterThanOrEqual(1); // itself
    expect(budget.behindPooler).toBe(false);
  });

  it.skipIf(!PGBOUNCER)('knows when it went through a pooler', async () => {
    const budget = await readConnectionBudget(bouncer!.url);
    expect(budget.behindPooler).toBe(true);
    expect(budget.maxConnections).toBeGreaterThan(0);
  });

  it(`holds at most ${DEFAULT_POOL_SIZE} connections for a CLI command, however many statements it runs at once`, async () => {
    const schema = testSchemaName();
    const name = `tokenctl-test-${schema}`;
    const store = await PostgresStore.open(`${url}${url.includes('?') ? '&' : '?'}application_name=${name}`, { schema });
    try {
      const counts: number[] = [];
      const count = async () =>
        counts.push(Number((await withPg(url, undefined, (db) => db.query<{ n: string }>('SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1', [name]))).rows[0]?.n));
      // Twenty statements that each hold their connection a moment, and a count taken meanwhile.
      const work = Promise.all(Array.from({ length: 20 }, () => store.stats(Date.now())));
      await count();
      await work;
      await count();
      expect(Math.max(...counts)).toBeGreaterThanOrEqual(1);
      expect(Math.max(...counts)).toBeLessThanOrEqual(DEFAULT_POOL_SIZE);
    } finally {
      await store.close();
      await dropSchema(url, schema);
    }
  });
});
