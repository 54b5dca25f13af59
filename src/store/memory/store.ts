import type { Trail } from '../trail.js';
import type { TokenRecord, TokenStore } from '../store.js';
import type { AuthorizationKey, AuthorizationRecord, IssuedCode, LoginDecision, RedeemOutcome } from '../store.js';
import { MemoryAuditStore } from './audit.js';

export const MEMORY_SCHEMA_VERSION = 1;

/**
 * The reference implementation of {@link TokenStore}: plain maps, every method atomic because
 * it never awaits in the middle. Used by engine tests and as the model the other stores match.
 * The methods are in one file per port, as in every store folder (clients.ts, token-reads.ts,
 * token-writes.ts, maintenance.ts, audit.ts), on the maps of store-core.ts.
 */
export class MemoryStore extends MemoryAuditStore implements TokenStore {
  async schemaVersion(): Promise<number> {
    return MEMORY_SCHEMA_VERSION;
  }

  // ---- the authorization code flow (memory/authorizations.ts) ----------------------------------

  async createAuthorization(authorization: AuthorizationRecord): Promise<void> {
    this.check();
    this.authorizations.create(authorization);
  }

  async findAuthorization(key: AuthorizationKey): Promise<AuthorizationRecord | null> {
    this.check();
    return this.authorizations.find(key);
  }

  async decideAuthorization(id: string, decision: LoginDecision, at: number): Promise<boolean> {
    this.check();
    return this.authorizations.decide(id, decision, at);
  }

  async issueAuthorizationCode(id: string, code: IssuedCode, at: number): Promise<boolean> {
    this.check();
    return this.authorizations.issueCode(id, code, at);
  }

  async redeemAuthorizationCode(codeDigest: string, at: number, tokens: TokenRecord[], trail: Trail): Promise<RedeemOutcome> {
    this.check();
    return this.authorizations.redeem(codeDigest, at, () => {
      this.insertTokensNow(tokens);
      if (trail.audit) this.appendAuditNow(trail.audit);
    });
  }

  async purgeAuthorizations(before: number, limit: number): Promise<number> {
    this.check();
    return this.authorizations.purge(before, limit);
  }

  async rememberDpopProof(key: string, until: number, now: number): Promise<boolean> {
    this.check();
    return this.dpopProofs.rememberDpopProof(key, until, now);
  }

  async purgeDpopProofs(before: number, batchSize: number): Promise<number> {
    this.check();
    return this.dpopProofs.purgeDpopProofs(before, batchSize);
  }

  async ping(): Promise<void> {
    this.check();
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}
