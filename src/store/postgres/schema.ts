import type { ClientBase } from 'pg';
import { NotAStoreError, SchemaTooNewError } from '../store.js';
import { APPLICATION, LATEST_SCHEMA_VERSION, META_TABLE, MIGRATIONS, OWN_TABLES, quoteIdent, type Migration } from './migrations.js';

/**
 * Where a store's schema is, in two numbers kept in {@link META_TABLE} (rolling upgrades,
 * docs/scale-out.md):
 * - `applied`: the last migration applied (key `applied_version`; a store written before the key
 *   existed has only `schema_version`, which was the same then);
 * - `nodesFrom`: the oldest schema version whose nodes run on it (key `schema_version`, the key
 *   every release has read and refused above its own newest version). Expand steps leave it
 *   where it is, so the nodes of the release before keep running; a contract step raises it.
 */
export interface SchemaState {
  applied: number;
  nodesFrom: number;
}

/** The schema version from which nodes run on a store once `m` is applied. */
function nodesFromAfter(m: Migration): number {
  return m.change === 'expand' ? 0 : m.change.contract.nodesFrom;
}

/**
 * Tells what the schema holds, reading only, so that another application's tables stay
 * untouched: `applied` 0 for a schema without any of tokenctl's tables (or one that does not
 * exist yet). Throws {@link NotAStoreError} when tables named like tokenctl's belong to
 * something else, {@link SchemaTooNewError} for a store that needs a newer node than this one.
 */
export async function identify(db: ClientBase, schema: string, location: string): Promise<SchemaState> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relname = ANY($2::text[])`,
    [schema, [META_TABLE, ...OWN_TABLES]],
  );
  const found = rows.map((r) => r.name);
  if (!found.includes(META_TABLE)) {
    const foreign = OWN_TABLES.find((t) => found.includes(t));
    if (foreign !== undefined) {
      throw new NotAStoreError(location, `schema "${schema}" has a table "${foreign}" that tokenctl did not create (no ${META_TABLE} table)`);
    }
    return { applied: 0, nodesFrom: 0 };
  }
  const meta = await db.query<{ key: string; value: string }>(`SELECT key, value FROM ${quoteIdent(schema)}.${META_TABLE}`);
  const value = (key: string) => meta.rows.find((r) => r.key === key)?.value;
  if (value('application') !== APPLICATION) {
    throw new NotAStoreError(location, `schema "${schema}" has a ${META_TABLE} table that does not name tokenctl`);
  }
  const nodesFrom = Number(value('schema_version') ?? 0);
  const applied = Number(value('applied_version') ?? nodesFrom);
  if (![nodesFrom, applied].every((v) => Number.isInteger(v) && v >= 0) || nodesFrom > applied) {
    throw new NotAStoreError(location, `schema "${schema}" has an invalid schema version`);
  }
  if (nodesFrom > LATEST_SCHEMA_VERSION) throw new SchemaTooNewError(location, nodesFrom, LATEST_SCHEMA_VERSION, applied);
  return { applied, nodesFrom };
}

/**
 * Brings `schema` up to {@link LATEST_SCHEMA_VERSION}, or leaves a store that is further on (a
 * newer release's expand steps) as it is. An up-to-date store is recognised with reads only (no
 * lock, no CREATE privilege needed), which is every start but the first. Otherwise one
 * transaction takes a transaction-scoped advisory lock named after the schema, creates the
 * schema if missing, reads the version again under the lock and applies what is pending: when
 * several nodes start at once, the others wait for the lock, then find the work done and apply
 * nothing. Either every pending migration is applied and recorded, or none is.
 */
export async function migrate(db: ClientBase, schema: string, location: string, now: number = Date.now()): Promise<void> {
  if ((await identify(db, schema, location)).applied >= LATEST_SCHEMA_VERSION) return;
  // READ COMMITTED whatever the database's default: the version read again under the lock must
  // see what a node that held the lock before committed (a REPEATABLE READ snapshot would not).
  await db.query('BEGIN ISOLATION LEVEL READ COMMITTED');
  try {
    await db.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`tokenctl migrate ${schema}`]);
    const exists = await db.query('SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1', [schema]);
    if (exists.rowCount === 0) await db.query(`CREATE SCHEMA ${quoteIdent(schema)}`);
    // The migrations' bare names land in the store's schema; SET LOCAL ends with this transaction,
    // so the connection goes back to its pool (or to PgBouncer's) as it came.
    await db.query(`SET LOCAL search_path TO ${quoteIdent(schema)}`);
    const current = await identify(db, schema, location);
    if (current.applied >= LATEST_SCHEMA_VERSION) {
      await db.query('COMMIT'); // another node was first
      return;
    }
    const pending = MIGRATIONS.filter((m) => m.version > current.applied);
    for (const m of pending) {
      await db.query(m.sql);
      await db.query('INSERT INTO migrations (version, name, applied_at) VALUES ($1, $2, $3)', [m.version, m.name, now]);
    }
    const expanded = MIGRATIONS.filter((m) => m.change === 'expand').map((m) => m.version);
    await db.query(`UPDATE migrations SET change = 'expand' WHERE version = ANY($1::int[]) AND change <> 'expand'`, [expanded]);
    const nodesFrom = Math.max(current.nodesFrom, ...pending.map(nodesFromAfter));
    await db.query(
      `INSERT INTO ${META_TABLE} (key, value) VALUES ('schema_version', $1), ('applied_version', $2)
        ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
      [String(nodesFrom), String(LATEST_SCHEMA_VERSION)],
    );
    await db.query('COMMIT');
  } catch (error) {
    await db.query('ROLLBACK').catch(() => undefined); // a lost connection rolls back by itself
    throw error;
  }
}
