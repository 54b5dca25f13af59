import { afterEach, describe, expect, it } from 'vitest';
import { beginStatement } from '../../src/store/postgres/database.js';
import { isolationFromUrl } from '../../src/store/postgres/pool.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { dropSchema, PG_SKIP_MESSAGE, PG_URL, testSchemaName } from '../helpers/pg.js';

/**
 * Contract 6: every transaction names its isolation level (READ COMMITTED unless the store is
 * configured SERIALIZABLE), so that a database whose default is another level changes nothing.
 * The default is changed per connection here (a startup option), never on the shared server.
 */

describe('isolation levels (no database needed)', () => {
  it('BEGIN names the level, with the transaction limits', () => {
    expect(beginStatement(0, 'read committed')).toBe('BEGIN ISOLATION LEVEL READ COMMITTED');
    expect(beginStatement(5000, 'serializable')).toBe(
      'BEGIN ISOLATION LEVEL SERIALIZABLE; SET LOCAL statement_timeout = 5000; SET LOCAL idle_in_transaction_session_timeout = 10000',
    );
  });

  it('?isolation= in the store URL: read-committed or serializable, anything else refused', () => {
    expect(isolationFromUrl('postgres://h/db')).toBeUndefined();
    expect(isolationFromUrl('postgres://h/db?schema=a&isolation=serializable')).toBe('serializable');
    expect(isolationFromUrl('postgres://h/db?isolation=read-committed')).toBe('read committed');
    expect(() => isolationFromUrl('postgres://h/db?isolation=repeatable-read')).toThrow(/read-committed .* or serializable/);
  });
});

/** `url` whose connections default to `level`, and with `extra` parameters. */
function withDefault(url: string, level: string, extra = ''): string {
  return `${url}${url.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c default_transaction_isolation=${level}`)}${extra}`;
}

type Transacting = { db: { transaction<T>(work: (tx: { query(sql: string): Promise<{ rows: { level: string }[] }> }) => Promise<T>): Promise<T> } };
const levelOf = (store: PostgresStore): Promise<string> =>
  (store as unknown as Transacting).db.transaction(async (tx) => (await tx.query("SELECT current_setting('transaction_isolation') AS level")).rows[0]!.level);

describe.skipIf(!PG_URL)('isolation levels on PostgreSQL', () => {
  const url = PG_URL ?? '';
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
  });

  async function open(location: string, schema: string): Promise<PostgresStore> {
    const store = await PostgresStore.open(location, { schema });
    cleanups.push(() => store.close());
    return store;
  }

  it('a connection defaulting to REPEATABLE READ: transactions run at READ COMMITTED; ?isolation=serializable: SERIALIZABLE', async () => {
    const schema = testSchemaName();
    cleanups.push(() => dropSchema(url, schema));
    expect(await levelOf(await open(withDefault(url, 'repeatable\\ read'), schema))).toBe('read committed');
    expect(await levelOf(await open(withDefault(url, 'repeatable\\ read', '&isolation=serializable'), schema))).toBe('serializable');
    expect(await levelOf(await open(withDefault(url, 'serializable'), schema))).toBe('read committed');
  });

  it('nodes creating a new store at once, on a REPEATABLE READ default: all start, the schema is made once', async () => {
    const schema = testSchemaName();
    cleanups.push(() => dropSchema(url, schema));
    const stores = await Promise.all(Array.from({ length: 4 }, () => open(withDefault(url, 'repeatable\\ read'), schema)));
    for (const store of stores) expect(await store.schemaVersion()).toBeGreaterThan(0);
  });
});

if (!PG_URL) describe.skip('isolation levels on PostgreSQL', () => it(PG_SKIP_MESSAGE, () => undefined));
