import type { TokenStore } from './store.js';

export interface OpenStoreOptions {
  /** PostgreSQL: connections in the pool. */
  poolSize?: number;
  /** PostgreSQL: the longest a statement may take before the request fails with 503. */
  statementTimeoutMs?: number;
  /**
   * Create the store (SQLite file, PostgreSQL schema and tables) when there is none (default
   * true). False: throw NoStoreError instead. Only `serve`, `client create` and `migrate --to` create.
   */
  create?: boolean;
  /** The caller only reads: a SQLite store this user may not write is opened read-only. */
  readOnly?: boolean;
}

export function isPostgresUrl(location: string): boolean {
  return /^postgres(ql)?:\/\//i.test(location);
}

/**
 * The composition point: a file path opens the SQLite store, a `postgres://` URL the PostgreSQL
 * store. Drivers are imported here, lazily, so a command loads only the one it uses.
 */
export async function openStore(location: string, options: OpenStoreOptions = {}): Promise<TokenStore> {
  if (isPostgresUrl(location)) {
    const { PostgresStore } = await import('./postgres/postgres-store.js');
    return PostgresStore.open(location, { poolSize: options.poolSize, statementTimeoutMs: options.statementTimeoutMs, create: options.create ?? true });
  }
  const { SqliteStore } = await import('./sqlite/sqlite-store.js');
  return SqliteStore.open(location, { create: options.create ?? true, readOnly: options.readOnly ?? false });
}
