import type { StoreObserver, TokenStore } from './store.js';

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
  /** SQLite, a long-running server: WAL checkpoints on a thread of their own, off the event loop. */
  backgroundCheckpoints?: boolean;
  /** PostgreSQL: how long serialization failures are retried (default 2 s, a request's budget). */
  retryBudgetMs?: number;
  /** Told of commit batches and row-cache hits (metrics); see StoreObserver. */
  observer?: StoreObserver;
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
    return (await import('./postgres/index.js')).open(location, options);
  }
  const { SqliteStore } = await import('./sqlite/sqlite-store.js');
  return SqliteStore.open(location, { create: options.create ?? true, readOnly: options.readOnly ?? false, backgroundCheckpoints: options.backgroundCheckpoints ?? false });
}

/**
 * PostgreSQL only: what `serve` should warn about the server's connection budget when this node
 * may open `processes` pools of `poolSize` connections (postgres/budget.ts), or undefined when
 * there is room or the store is a file. The check needs its own connection, for a moment.
 */
export async function connectionBudgetWarning(location: string, poolSize: number | undefined, processes: number): Promise<string | undefined> {
  if (!isPostgresUrl(location)) return undefined;
  const { budgetWarning, readConnectionBudget, DEFAULT_POOL_SIZE } = await import('./postgres/index.js');
  try {
    return budgetWarning(await readConnectionBudget(location), (poolSize ?? DEFAULT_POOL_SIZE) * processes, location);
  } catch (error) {
    return `could not check PostgreSQL's connection budget (max_connections, pg_stat_activity): ${error instanceof Error ? error.message : String(error)}`;
  }
}
