import type { Trail } from '../trail.js';
import { performance } from 'node:perf_hooks';
import type { BulkBatch, BulkSelector, MintLimit, MintOutcome, RotateOutcome, TokenRecord } from '../store.js';
import { SqliteTokenReads } from './token-reads.js';
import { letOtherWritersIn } from './store-core.js';
import type { TokenWrites } from '../store.js';

/** The SQLite store's token writes (ports/token-writes.ts). */
export abstract class SqliteTokenWrites extends SqliteTokenReads implements TokenWrites {
  async insertTokens(tokens: TokenRecord[]): Promise<void> {
    await this.write(() => this.tx.insertMany(tokens));
  }

  /** The event, when there is one to write, commits with the revocation, in its transaction's outbox row (trail.ts). */
  async revokeToken(jti: string, at: number, cascadeGrant: boolean, trail: Trail): Promise<boolean> {
    return this.write(() => this.trail(this.tx.revoke(jti, at, cascadeGrant), trail));
  }

  async insertMintedAccess(access: TokenRecord, refreshJti: string, limit?: MintLimit): Promise<MintOutcome> {
    // One read, then the insert as the only write: atomic without a savepoint (group-commit.ts).
    return this.write(() => this.tx.mint(access, refreshJti, limit), true);
  }

  /**
   * Writers take turns on the file (every write is BEGIN IMMEDIATE), so a mint that commits after
   * this finds its refresh token revoked, and one that committed before is revoked here.
   */
  async revokeGrant(grantId: string, at: number, trail: Trail): Promise<number> {
    return this.write(() => this.trail(this.st.revokeGrant.run(at, grantId).changes, trail));
  }

  /** The batch's event with the batch, when it revoked a token (ports/token-writes.ts). */
  async revokeBulk(selector: BulkSelector, at: number, limit: number, resume: string | undefined, trail: Trail): Promise<BulkBatch> {
    const started = performance.now();
    const done = await this.write(() => {
      const batch = this.tx.revokeBulk(selector, at, limit, resume);
      this.trail(batch.revoked, trail);
      return batch;
    });
    if (done.more) await letOtherWritersIn(started);
    return done;
  }

  async rotateRefreshToken(oldJti: string, issued: TokenRecord[], at: number, revokeJti?: string): Promise<RotateOutcome> {
    return this.write(() => this.tx.rotate(oldJti, issued, at, revokeJti));
  }
}
