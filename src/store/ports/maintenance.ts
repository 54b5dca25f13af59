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
   * Deletes up to `batchSize` grant records created before `before` that have no token left
   * (their tokens all purged), looking at the next `batchSize` grants in grant order after
   * `after` (null: from the first); `next` is where the following call goes on, null once the
   * last grant was looked at. A grant with any token, even expired, stays: its revocation must
   * still cover what a refresh could mint from it. The trail's audit line, when any was deleted,
   * is written with the deletion, its count set. A store without grant records deletes nothing.
   */
  purgeGrantsBatch(before: number, after: string | null, batchSize: number, trail: Trail): Promise<{ deleted: number; next: string | null }>;

  /**
   * Deletes up to `batchSize` of the oldest audit lines written before `before` (the retention of
   * the audit trail), and writes the trail's own line, telling how many, in the same transaction.
   */
  purgeAuditBatch(before: number, batchSize: number, trail: Trail): Promise<number>;

  /** How many audit lines {@link purgeAuditBatch} would delete in all for this `before`. */
  countAuditBefore(before: number): Promise<number>;

  /**
   * Counts at `now`. With `clientId`, the token counts and the oldest expiry are that client's
   * only (counted in the store, never by loading the tokens); `clients` is always the total.
   */
  stats(now: number, clientId?: string): Promise<StoreStats>;
}
