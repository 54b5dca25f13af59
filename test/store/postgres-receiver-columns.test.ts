import { it } from 'vitest';
import { PG_SKIP_MESSAGE, PG_URL, openTestStore, withPg } from '../helpers/pg.js';
import { describeReceiverColumns } from './receiver-columns.js';

if (PG_URL === undefined) it.skip(`receiver columns on PostgreSQL: ${PG_SKIP_MESSAGE}`, () => {});
else {
  describeReceiverColumns('PostgreSQL', async () => {
    const { store, schema, cleanup } = await openTestStore(PG_URL!);
    return { store, sql: async (sql, params = []) => withPg(PG_URL!, schema, async (c) => (await c.query(sql, params)).rows), cleanup };
  });
}
