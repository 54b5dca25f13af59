/**
 * The PostgreSQL store's door: the only module imported from outside `postgres/`.
 * (Stand-in written by the SQLite session so that open-store.ts dispatches to it; the PostgreSQL
 * session's own index.ts, with the class moved to store.ts, replaces this file.)
 */
import type { OpenStoreOptions } from '../open-store.js';
import type { TokenStore } from '../store.js';
import { PostgresStore } from './postgres-store.js';

export { budgetWarning, readConnectionBudget } from './budget.js';
export { DEFAULT_POOL_SIZE } from './pool.js';

/** Opens (with `create`, the default, creates) the store at the `postgres://` URL `location`. */
export async function open(location: string, options: OpenStoreOptions): Promise<TokenStore> {
  return PostgresStore.open(location, {
    poolSize: options.poolSize,
    statementTimeoutMs: options.statementTimeoutMs,
    retryBudgetMs: options.retryBudgetMs,
    create: options.create ?? true,
  });
}
