import type { OpenStoreOptions, TokenStore } from './store.js';

export type { OpenStoreOptions } from './store.js';


export function isPostgresUrl(location: string): boolean {
  return /^postgres(ql)?:\/\//i.test(location);
}

/**
 * The composition point: a file path opens the SQLite store, a `postgres://` URL the PostgreSQL
 * store. Drivers are imported here, lazily, so a command loads only the one it uses.
 */
export async function openStore(location: string, options: OpenStoreOptions = {}): Promise<TokenStore> {
  const { open } = isPostgresUrl(location) ? await import('./postgres/index.js') : await import('./sqlite/index.js');
  return open(location, options);
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
