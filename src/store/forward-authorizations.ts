import type { Trail } from './trail.js';
import type { AuthorizationStore } from './ports/authorizations.js';
import type { TokenRecord } from './records.js';
import type { AuthorizationKey, AuthorizationRecord, IssuedCode, LoginDecision, RedeemOutcome } from './authorization-records.js';
import { ForwardsEventStore } from './forward-events.js';

/**
 * The {@link AuthorizationStore} part of a SQL {@link TokenStore}, forwarded to the store's own
 * authorizations object (`sqlite/authorizations.ts`, `postgres/authorizations.ts`), as
 * {@link ForwardsEventStore} does for the events: the store extends this and names that object in
 * `_authorizationStore()`. Every method is async, so that whatever that throws is a rejection.
 */
export abstract class ForwardsAuthorizationStore extends ForwardsEventStore implements AuthorizationStore {
  /** The object the authorization methods go to (metrics wrap the store's operations, not this). */
  protected abstract _authorizationStore(): AuthorizationStore;

  async createAuthorization(authorization: AuthorizationRecord): Promise<void> {
    return this._authorizationStore().createAuthorization(authorization);
  }
  async findAuthorization(key: AuthorizationKey): Promise<AuthorizationRecord | null> {
    return this._authorizationStore().findAuthorization(key);
  }
  async decideAuthorization(id: string, decision: LoginDecision, at: number): Promise<boolean> {
    return this._authorizationStore().decideAuthorization(id, decision, at);
  }
  async issueAuthorizationCode(id: string, code: IssuedCode, at: number): Promise<boolean> {
    return this._authorizationStore().issueAuthorizationCode(id, code, at);
  }
  async redeemAuthorizationCode(codeDigest: string, at: number, tokens: TokenRecord[], trail: Trail): Promise<RedeemOutcome> {
    return this._authorizationStore().redeemAuthorizationCode(codeDigest, at, tokens, trail);
  }
  async purgeAuthorizations(before: number, limit: number): Promise<number> {
    return this._authorizationStore().purgeAuthorizations(before, limit);
  }
}
