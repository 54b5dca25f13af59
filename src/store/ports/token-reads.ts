import type { BulkSelector, ClientAndToken, TokenFilter, TokenRecord } from '../records.js';

/**
 * Reading tokens: by digest for a presented token (RFC 7662 §2.1, "the string value of the token"),
 * by jti for a token named by an operator or an event, and in lists and pages for the CLI.
 * Every answer is what is committed: nothing is cached across calls.
 */
export interface TokenReads {
  /** The token whose string has this SHA-256 digest (stores never see the string itself). */
  findTokenByDigest(digest: string): Promise<TokenRecord | null>;
  findTokenByJti(jti: string): Promise<TokenRecord | null>;
  /**
   * The client `clientId` and the token with `digest` (null: no token wanted) in one read, as of
   * one moment: what an endpoint needs to authenticate its caller and judge a token, for the
   * price of one read transaction (SQLite) or one round trip (PostgreSQL) instead of two.
   */
  findClientAndToken(clientId: string, digest: string | null): Promise<ClientAndToken>;
  listTokens(filter: TokenFilter): Promise<TokenRecord[]>;
  /**
   * Every token, a page at a time, for reading a whole store without holding it in memory
   * (`tokenctl migrate`): at most `limit` tokens whose jti sorts after `afterJti` (null: from the
   * first), in the store's own jti order. Passing the last jti of a page as the next `afterJti`
   * visits every token once. The order is the store's (its collation), not necessarily another's.
   */
  scanTokens(afterJti: string | null, limit: number): Promise<TokenRecord[]>;
  /** The tokens with these jtis, in no particular order; unknown jtis are left out. */
  findTokensByJti(jtis: readonly string[]): Promise<TokenRecord[]>;
  /** Counts exactly the tokens TokenWrites.revokeBulk, repeated to the end, would revoke at `now`. */
  countRevocable(selector: BulkSelector, now: number): Promise<number>;

  /** How many tokens {@link listTokens} would list for the filter without `limit` and `after`. */
  countTokens(filter: TokenFilter): Promise<number>;
}
