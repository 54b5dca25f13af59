import type { OpenStoreOptions, TokenStore } from '../store.js';
import { PostgresStore } from './store.js';

/*
 * The PostgreSQL store's door: what the composition point (open-store.ts) needs, and nothing of
 * how the store is built. The same shape as every store's folder.
 */

export { budgetWarning, readConnectionBudget } from './budget.js';
export { DEFAULT_POOL_SIZE } from './pool.js';

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
