import type { Trail } from '../trail.js';
import type { StoreStats } from '../records.js';

/** Purging what can no longer be used, and the counts `tokenctl status` shows. */
export interface MaintenanceStore {
  /**
   * Deletes up to `batchSize` tokens that expired, or were revoked, before `before`. A replaced
   * refresh token stays until it expires or is revoked, so that its reuse is still detected.
   * Returns how many were deleted; the caller repeats until 0, so that one call never holds
   * the store for long. With the trail's `audit`, and when it deleted any, the entry is appended in the same
   * transaction with `count` set to how many: the trail holds exactly what was deleted, however
   * the purge ends.
   */
  purgeBatch(before: number, batchSize: number, trail: Trail): Promise<number>;

  /** How many tokens {@link purgeBatch} would delete in all for this `before`. */
  countPurgeable(before: number): Promise<number>;

  /**
   * Counts at `now`. With `clientId`, the token counts and the oldest expiry are that client's
   * only (counted in the store, never by loading the tokens); `clients` is always the total.
   */
  stats(now: number, clientId?: string): Promise<StoreStats>;
}
