import type { Trail } from '../trail.js';
import type { BulkBatch, BulkSelector, MintLimit, MintOutcome, RotateOutcome, TokenRecord } from '../store.js';
import { MemoryTokenReads } from './token-reads.js';
import type { TokenWrites } from '../store.js';

/** The in-memory store's token writes (ports/token-writes.ts). */
export abstract class MemoryTokenWrites extends MemoryTokenReads implements TokenWrites {
  async insertTokens(tokens: TokenRecord[]): Promise<void> {
    this.check();
    this.insertTokensNow(tokens);
  }

  async revokeToken(jti: string, at: number, cascadeGrant: boolean, trail: Trail): Promise<boolean> {
    const { audit, event } = trail;
    this.check();
    const t = this.tokens.get(jti);
    if (!t || t.revokedAt !== null) return false;
    t.revokedAt = at;
    if (cascadeGrant) this.revokeGrantSync(t.grantId, at);
    if (audit) this.auditLog.push({ ...audit, id: this.nextAuditId++ });
    this.events.emit(event);
    return true;
  }

  async insertMintedAccess(access: TokenRecord, refreshJti: string, limit?: MintLimit): Promise<MintOutcome> {
    this.check();
    const refresh = this.tokens.get(refreshJti);
    if (!refresh) return 'unknown';
    if (refresh.revokedAt !== null || refresh.replacedAt !== null) return 'revoked';
    if (limit) {
      let recent = 0;
      for (const t of this.tokens.values()) if (t.grantId === refresh.grantId && t.issuedAt > limit.since) recent++;
      if (recent >= limit.max) return 'limited';
    }
    await this.insertTokens([access]);
    return 'inserted';
  }

  async revokeGrant(grantId: string, at: number, trail: Trail): Promise<number> {
    const { audit, event } = trail;
    this.check();
    const n = this.revokeGrantSync(grantId, at);
    if (n > 0 && audit) this.auditLog.push({ ...audit, count: n, id: this.nextAuditId++ });
    if (n > 0) this.events.emit(event);
    return n;
  }

  async revokeBulk(selector: BulkSelector, at: number, limit: number, resume: string | undefined, trail: Trail): Promise<BulkBatch> {
    const { audit, event } = trail;
    this.check();
    const revocable = this.revocable(selector, at);
    // A jti names one token or one grant: done in one step. Users and clients go in batches.
    const victims = 'jti' in selector ? revocable : revocable.slice(0, Math.max(1, limit));
    for (const t of victims) t.revokedAt = at;
    if (victims.length > 0 && audit) this.auditLog.push({ ...audit, count: victims.length, id: this.nextAuditId++ });
    const more = victims.length < revocable.length;
    if (victims.length > 0) this.events.emit(event);
    // The resume only says "a batch ran before" here: the memory store needs no position.
    return { revoked: victims.length, more, ...(more ? { resume: 'more' } : {}) };
  }

  async rotateRefreshToken(oldJti: string, issued: TokenRecord[], at: number, revokeJti?: string): Promise<RotateOutcome> {
    this.check();
    const old = this.tokens.get(oldJti);
    if (!old || old.revokedAt !== null) return 'conflict';
    const newRefresh = issued.find((t) => t.type === 'refresh_token');
    if (revokeJti === undefined) {
      if (old.replacedAt !== null) return 'conflict';
    } else {
      const lost = this.tokens.get(revokeJti);
      if (old.replacedBy !== revokeJti || !lost || lost.revokedAt !== null || lost.replacedAt !== null) return 'conflict';
      // Superseded: revoked, and replaced by the new token, so that presenting it again is reuse.
      lost.revokedAt = at;
      lost.replacedAt = at;
      lost.replacedBy = newRefresh?.jti ?? null;
      for (const t of this.tokens.values()) {
        const lostResponse = t.grantId === lost.grantId && t.type === 'access_token' && t.issuedAt === lost.issuedAt;
        if (lostResponse && t.issuedAt !== old.issuedAt) t.revokedAt ??= at;
      }
    }
    old.replacedAt ??= at;
    old.replacedBy = newRefresh?.jti ?? null;
    for (const t of issued) this.put(t);
    return 'rotated';
  }
}
