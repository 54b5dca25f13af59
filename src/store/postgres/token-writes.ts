import type { Trail } from '../trail.js';
import type { BulkBatch, BulkSelector, MintLimit, MintOutcome, RotateOutcome, TokenRecord } from '../store.js';
import { INSERT_TOKENS, tokenColumns } from './statements.js';
import { revokeBulk, revokeGrant, revokeWithGrant, rotateRefreshToken } from './writes.js';
import { PostgresTokenReads } from './token-reads.js';
import type { TokenWrites } from '../store.js';

/** The PostgreSQL store's token writes (ports/token-writes.ts). */
export abstract class PostgresTokenWrites extends PostgresTokenReads implements TokenWrites {
  async insertTokens(tokens: TokenRecord[]): Promise<void> {
    if (tokens.length === 0) return;
    await this.db.query(INSERT_TOKENS, tokenColumns(tokens));
  }

  async revokeToken(jti: string, at: number, cascadeGrant: boolean, trail: Trail): Promise<boolean> {
    const { audit, event } = trail;
    if (cascadeGrant) return revokeWithGrant(this.db, jti, at, audit, event);
    return this.revocations.add({ jti, at, audit, event });
  }

  async insertMintedAccess(access: TokenRecord, refreshJti: string, limit?: MintLimit): Promise<MintOutcome> {
    return this.mints.add({ access, refreshJti, limit });
  }

  async revokeGrant(grantId: string, at: number, trail: Trail): Promise<number> {
    const { audit, event } = trail;
    return revokeGrant(this.db, grantId, at, audit, event);
  }

  async revokeBulk(selector: BulkSelector, at: number, limit: number, resume: string | undefined, trail: Trail): Promise<BulkBatch> {
    const { audit, event } = trail;
    return revokeBulk(this.db, selector, at, limit, audit, resume, event);
  }

  async rotateRefreshToken(oldJti: string, issued: TokenRecord[], at: number, revokeJti?: string): Promise<RotateOutcome> {
    return rotateRefreshToken(this.db, oldJti, issued, at, revokeJti);
  }
}
