import { performance } from 'node:perf_hooks';
import { StoreUnavailableError, type StoreObserver, type TokenStore } from '../store/store.js';
import type { BoundCounter, BoundHistogram } from './bound.js';
import type { TokenctlMetrics } from './metrics.js';
import { isConflictOrTimeout } from '../store/open-store.js';
import { wrapStore } from './wrap-store.js';

/** The StoreObserver a store is opened with: group-commit batch sizes and kept-row cache hits. */
export function storeObserver(metrics: TokenctlMetrics): StoreObserver {
  const hit = metrics.rowCache.labels('hit');
  const miss = metrics.rowCache.labels('miss');
  const batches = metrics.commitBatchSize.labels();
  return {
    commitBatch: (size) => batches.observe(size),
    rowCache: (wasHit) => (wasHit ? hit : miss).inc(),
  };
}

/** The kind label of tokenctl_store_errors_total: a few words, never a message. */
export function storeErrorKind(error: unknown): string {
  if (error instanceof StoreUnavailableError) return 'unavailable';
  // Each store kind names its driver's codes (SQLite's busy, PostgreSQL's serialization failure…).
  if (isConflictOrTimeout(error)) return 'conflict_or_timeout';
  return 'error';
}

/**
 * The store the server's engine works on, timed per operation (TokenStore method) into
 * tokenctl_store_operation_duration_seconds, failures into tokenctl_store_errors_total. Label
 * children are made on first call, so only operations the server uses appear in a scrape.
 */
export function instrumentStore(store: TokenStore, metrics: TokenctlMetrics): TokenStore {
  return wrapStore(store, (operation, call) => {
    let duration: BoundHistogram | undefined;
    const errors = new Map<string, BoundCounter>();
    const observe = (start: number): void => (duration ??= metrics.storeDuration.labels(operation)).observe((performance.now() - start) / 1000);
    const count = (error: unknown): void => {
      const kind = storeErrorKind(error);
      let child = errors.get(kind);
      if (child === undefined) errors.set(kind, (child = metrics.storeErrors.labels(operation, kind)));
      child.inc();
    };
    // Written out rather than through whenSettled: this runs on every store call of every
    // request. The caller gets the store's own promise (no extra hop before its await resumes);
    // the timing hangs off it, and a rejection is counted there and handled by the caller.
    return (...args) => {
      const start = performance.now();
      let result: unknown;
      try {
        result = call(...args);
      } catch (error) {
        count(error);
        throw error;
      }
      if (result instanceof Promise) result.then(() => observe(start), count);
      else observe(start);
      return result;
    };
  });
}
