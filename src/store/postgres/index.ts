import type { OpenStoreOptions, TokenStore } from '../store.js';
import { PostgresStore } from './store.js';

/*
 * The PostgreSQL store's door: what the composition point (open-store.ts) needs, and nothing of
 * how the store is built. The same shape as every store's folder.
 */

import { budgetWarning, readConnectionBudget } from './budget.js';
import { DEFAULT_POOL_SIZE } from './pool.js';

/** Opens (and, unless `create` is false, creates or migrates) the store at a `postgres://` URL. */
export async function open(location: string, options: OpenStoreOptions): Promise<TokenStore> {
  return PostgresStore.open(location, {
    poolSize: options.poolSize,
    statementTimeoutMs: options.statementTimeoutMs,
    retryBudgetMs: options.retryBudgetMs,
    create: options.create ?? true,
    observer: options.observer,
  });
}

/**
 * What `serve` should warn about the server's connection budget when this node may open
 * `processes` pools of `poolSize` connections (budget.ts), or undefined when there is room.
 */
export async function connectionBudgetWarning(location: string, poolSize: number | undefined, processes: number): Promise<string | undefined> {
  try {
    return budgetWarning(await readConnectionBudget(location), (poolSize ?? DEFAULT_POOL_SIZE) * processes, location);
  } catch (error) {
    return `could not check PostgreSQL's connection budget (max_connections, pg_stat_activity): ${error instanceof Error ? error.message : String(error)}`;
  }
}
