import type { Trail } from '../trail.js';
import type { BulkBatch, BulkSelector, MintLimit, MintOutcome, RotateOutcome, TokenRecord } from '../records.js';

/**
 * The writes that decide races on tokens and grants (RFC 6749 §10.4, RFC 7009 §2.1, RFC 9700
 * §4.14.2): each is one atomic step, never a transaction handed to the caller.
 */
export interface TokenWrites {
  /** Inserts tokens (an access/refresh pair) in one transaction. */
  insertTokens(tokens: TokenRecord[]): Promise<void>;

  /**
   * Revokes one token if it is not revoked yet. Returns true if this call revoked it
   * (RFC 7009 §2.2: the first revocation wins, later ones are no-ops). With `cascadeGrant`, and
   * only if this call revoked it, the whole grant is revoked in the same transaction, exactly as
   * {@link revokeGrant} does (RFC 7009 §2.1: revoking a refresh token ends its access tokens).
   * With the trail's `audit`, and only if this call revoked it, the entry is appended in the same
   * transaction too: one durable commit for the revocation and its trail.
   *
   * With the trail's `event`, and only if this call revoked it, the security event is written to the outbox
   * in the same transaction, with one delivery per registered receiver (outbox.ts); with no
   * receiver registered, nothing is written. The same holds for every trail's `event` below.
   */
  revokeToken(jti: string, at: number, cascadeGrant: boolean, trail: Trail): Promise<boolean>;

  /**
   * Inserts `access`, an access token minted from the refresh token `refreshJti` on the strength
   * of an earlier read, unless that refresh token has stopped being current since (revoked,
   * replaced, its grant revoked, or deleted with its client): then nothing is inserted, and the
   * answer says why. Serialised with {@link revokeGrant} on the grant (contract 3, "a revocation
   * is final"): a grant revocation that committed first is seen here; one that commits after
   * this insert revokes the new token with the grant. Concurrent mints of one grant do not wait
   * for each other. With `limit`, nothing is inserted ('limited') when the grant already has
   * `limit.max` tokens issued after `limit.since`, counted in the same step.
   */
  insertMintedAccess(access: TokenRecord, refreshJti: string, limit?: MintLimit): Promise<MintOutcome>;

  /**
   * Revokes a grant, atomically: every not-yet-revoked token of it, and the grant itself, so that
   * no token can be minted from it once this has returned, by any process or node. A mint or
   * rotation of the grant that committed before this call is revoked by it; one that has not
   * committed yet is refused. Revoking a grant twice is harmless. With the trail's `audit`, the entry is
   * appended in the same transaction when any token changed, its `count` set to how many.
   * Returns how many tokens changed. With the trail's `event`, written as {@link revokeToken} says when any
   * token changed.
   */
  revokeGrant(grantId: string, at: number, trail: Trail): Promise<number>;

  /**
   * One batch of a bulk revocation, as one atomic step that holds the store briefly: revokes
   * the live (not yet revoked, not yet expired at `at`) tokens the selector names, and whole
   * grants as {@link revokeGrant} does (a user's or a client's grants; for a `jti`, the token, or
   * its grant when it is a refresh token), at most about `limit` of them in this call. A replaced
   * refresh token that is not yet revoked counts as revocable; tokens already expired are left as
   * they are. With the trail's `audit`, the entry is appended in the same transaction when any token changed,
   * its `count` set to how many.
   *
   * The caller repeats while `more` is true, passing the `resume` of the last answer (a store may
   * use it to skip what it has done, so that a large revocation costs what it revokes, not the
   * square of it). Once a call answers `more: false`, every grant the
   * selector named when that call ran is revoked, and so stays (see revokeGrant): tokens minted
   * between two batches are revoked by a later one.
   *
   * With the trail's `event`: written in the transaction of this call when it revoked any token,
   * as for every other write (grants it marked revoked without a live token do not count). The
   * caller gives each batch an event of its own (docs/events.md): the first batch that revokes
   * tells the receivers before the rest runs, so a bulk revocation stopped part way has told
   * them of what it did.
   */
  revokeBulk(selector: BulkSelector, at: number, limit: number, resume: string | undefined, trail: Trail): Promise<BulkBatch>;

  /**
   * Refresh token rotation (contract 3, RFC 9700 §4.14.2), as one atomic conditional update:
   * marks `oldJti` replaced by `issued`'s refresh token and inserts `issued`, but only if
   * `oldJti` is still unreplaced and unrevoked, and its grant unrevoked (serialised with
   * {@link revokeGrant} as {@link insertMintedAccess} is). Of concurrent calls for one token,
   * exactly one sees `rotated`; the others write nothing and see `conflict`.
   *
   * With `revokeJti` (the grace-period re-use of the immediately previous refresh token), the
   * refresh token it names (the replacement whose response the client lost) must still be
   * current; in the same step it is superseded (revoked, and marked replaced by the new refresh
   * token, so that presenting it again is reuse), together with the access tokens issued with it
   * (its grant's access tokens issued at the same instant, unless `oldJti` was issued at that
   * instant too: whoever received that lost response holds them), and `oldJti` (already replaced)
   * is pointed at the new token instead. Without it, `oldJti` must be unreplaced.
   */
  rotateRefreshToken(
    oldJti: string,
    issued: TokenRecord[],
    at: number,
    revokeJti?: string,
  ): Promise<RotateOutcome>;
}
