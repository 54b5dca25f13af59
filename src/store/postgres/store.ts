import type { PoolClient } from 'pg';
import { NoStoreError, type PoolState, type StoreObserver, type TokenStore } from '../store.js';
import { Database, withClient, type Isolation } from './database.js';
import { mapPgError, redactUrl } from './errors.js';
import { META_TABLE } from './migrations.js';
import { identify, migrate } from './schema.js';
import { DEFAULT_POOL_SIZE, checkSchemaName, createPool, isolationFromUrl, schemaFromUrl } from './pool.js';
import { PostgresAuditStore } from './audit.js';

export interface PostgresStoreOptions {
  /** Connections in the pool (default {@link DEFAULT_POOL_SIZE}: what one CLI command needs; `serve` sets its own). */
  poolSize?: number;
  /**
   * Keep the store in this schema (created if missing) instead of the connection's current one.
   * The URL may name it too, as `?schema=NAME`, so that `--db` and TOKENCTL_DB can.
   */
  schema?: string;
  /** How long to wait for a connection before the store counts as unavailable (default 3 s). */
  connectionTimeoutMs?: number;
  /** Longest a statement may run (default 30 s). */
  statementTimeoutMs?: number;
  /**
   * How long serialization failures and deadlocks are retried before the store counts as
   * unavailable (default 2 s: a request's budget). An operator's command may wait longer.
   */
  retryBudgetMs?: number;
  /**
   * Create the schema and tables when missing (default true). False: a schema without
   * tokenctl's tables is refused with NoStoreError, and nothing is created.
   */
  create?: boolean;
  /** Told the size of each batch of revocations committed together (metrics). */
  observer?: StoreObserver;
  /**
   * The isolation level every transaction names (default READ COMMITTED, whatever the
   * database's default); the URL may say `?isolation=serializable` instead.
   */
  isolation?: Isolation;
}

/**
 * The PostgreSQL {@link TokenStore}: one database shared by many server nodes and CLI commands.
 *
 * Nothing is cached and nothing is locked in the process: racing requests may arrive at
 * different nodes, so every atomic operation is one statement or one transaction whose
 * conditional UPDATE decides the race under PostgreSQL's row locks (READ COMMITTED re-checks a
 * row's conditions after waiting for a concurrent writer). Every transaction names its level
 * (database.ts); a statement sent alone takes its snapshot at its start at any level, and at a
 * stricter default a conflict it meets is a serialization failure, which is run again. An unreachable or vanished database
 * surfaces as {@link StoreUnavailableError} within the connection timeout, and the pool
 * reconnects by itself when the database is back. The methods are in one file per port, as in
 * every store folder (clients.ts, token-reads.ts, token-writes.ts, maintenance.ts, audit.ts), on
 * the pool and batchers of store-core.ts; this class opens and closes the store.
 */
export class PostgresStore extends PostgresAuditStore implements TokenStore {
  /**
   * Connects, checks that the schema is a tokenctl store (or empty) and applies pending
   * migrations. Rejects with StoreUnavailableError, NotAStoreError or SchemaTooNewError.
   */
  static async open(url: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const inUrl = schemaFromUrl(url);
    if (options.schema !== undefined && inUrl !== undefined && options.schema !== inUrl) {
      throw new Error(`two schemas given for one store: "${inUrl}" in the URL, "${options.schema}" in the options`);
    }
    const schema = options.schema ?? inUrl;
    if (schema !== undefined) checkSchemaName(schema);
    const isolation = options.isolation ?? isolationFromUrl(url) ?? 'read committed';
    const location = options.schema === undefined ? redactUrl(url) : `${redactUrl(url)} (schema ${options.schema})`;
    const statementTimeoutMs = options.statementTimeoutMs ?? 30_000;
    const poolSize = options.poolSize ?? DEFAULT_POOL_SIZE;
    const pool = createPool(url, {
      poolSize,
      connectionTimeoutMs: options.connectionTimeoutMs ?? 3_000,
      statementTimeoutMs,
    });
    try {
      await withClient(pool, async (db) => {
        const target = schema ?? (await currentSchema(db, location));
        if (options.create === false && (await identify(db, target, location)).applied === 0) {
          throw new NoStoreError(location, `schema "${target}" holds no tokenctl tables (check the database name and ?schema= in the URL)`);
        }
        await migrate(db, target, location);
      });
      const db = new Database(pool, location, { schema, statementTimeoutMs, retryBudgetMs: options.retryBudgetMs, isolation });
      return new PostgresStore(db, location, poolSize, options.observer);
    } catch (error) {
      await pool.end().catch(() => undefined);
      throw mapPgError(error, location);
    }
  }

  async schemaVersion(): Promise<number> {
    // The last migration applied; `schema_version` alone on a store written before rolling upgrades (schema.ts).
    const { rows } = await this.db.query<{ key: string; value: string }>(`SELECT key, value FROM ${META_TABLE} WHERE key IN ('schema_version', 'applied_version')`);
    const value = (key: string) => rows.find((r) => r.key === key)?.value;
    return Number(value('applied_version') ?? value('schema_version') ?? 0);
  }

  async rememberDpopProof(key: string, until: number, now: number): Promise<boolean> {
    return this.dpopProofs.rememberDpopProof(key, until, now);
  }

  async purgeDpopProofs(before: number, batchSize: number): Promise<number> {
    return this.dpopProofs.purgeDpopProofs(before, batchSize);
  }

  async ping(): Promise<void> {
    await this.db.query('SELECT 1');
  }

  async close(): Promise<void> {
    await this.db.close();
  }

  poolState(): PoolState {
    return this.db.poolState();
  }
}

/** The schema unqualified names resolve to, when the caller named none. */
async function currentSchema(db: PoolClient, location: string): Promise<string> {
  const { rows } = await db.query<{ schema: string | null }>('SELECT current_schema() AS schema');
  const schema = rows[0]?.schema;
  if (!schema) throw new Error(`cannot open ${location}: its search_path names no existing schema; name one with ?schema=NAME in the URL`);
  return schema;
}
