import type { Trail } from '../trail.js';
import type { TokenRecord } from '../records.js';
import type { AuthorizationKey, AuthorizationRecord, IssuedCode, LoginDecision, RedeemOutcome } from '../authorization-records.js';

/**
 * The authorization code flow's requests (RFC 6749 §4.1, contract 5), from `GET /oauth/authorize`
 * to the code's redemption. Every step is one atomic conditional write, so that of two racing
 * answers, code issues or redemptions exactly one wins, on one process or many.
 */
export interface AuthorizationStore {
  /** Stores a new request, `pending`, awaiting the login app (RFC 6749 §4.1.1). */
  createAuthorization(authorization: AuthorizationRecord): Promise<void>;

  /** The request whose challenge, verifier or code has this digest, or null. */
  findAuthorization(key: AuthorizationKey): Promise<AuthorizationRecord | null>;

  /**
   * Records the login app's answer, if the request is still `pending` and `at` is before its
   * `expiresAt` ("a challenge is answered once", contract 5). Returns whether this call did.
   */
  decideAuthorization(id: string, decision: LoginDecision, at: number): Promise<boolean>;

  /**
   * Issues the code of an `accepted` request that has none yet, while `at` is before the
   * request's `expiresAt` (RFC 6749 §4.1.2: one code per authorization). Returns whether this call did.
   */
  issueAuthorizationCode(id: string, code: IssuedCode, at: number): Promise<boolean>;

  /**
   * RFC 6749 §4.1.2, §4.1.3: redeems the code with this digest and inserts `tokens` (the new
   * grant) in one transaction, with the trail's `audit` line, if the code is not redeemed yet and
   * `at` is before its expiry: 'redeemed'. A code redeemed before is 'used' and nothing is
   * written (the caller revokes the grant it formed: "the authorization server SHOULD revoke all
   * tokens previously issued based on that authorization code"). Of concurrent redemptions of
   * one code exactly one sees 'redeemed'.
   */
  redeemAuthorizationCode(codeDigest: string, at: number, tokens: TokenRecord[], trail: Trail): Promise<RedeemOutcome>;

  /**
   * Deletes up to `limit` requests that ended before `before`: whose `expiresAt` and
   * `codeExpiresAt` (when it has a code) are both before it. Returns how many; the caller
   * repeats until 0. Deleting a client deletes its requests too.
   */
  purgeAuthorizations(before: number, limit: number): Promise<number>;
}
