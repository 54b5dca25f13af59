/** The records the store contract (store.ts, ports/) speaks of. All times are integer milliseconds since the Unix epoch. */

/** The two kinds of token (spec 2.3 `token_type`). */
export type TokenType = 'access_token' | 'refresh_token';

export const TOKEN_TYPES: readonly TokenType[] = ['access_token', 'refresh_token'];

/** A registered client (spec part 1, part 5). */
export interface ClientRecord {
  /** The client ID. */
  id: string;
  /** A human name, for operators. */
  name: string;
  /**
   * Salted scrypt hash of the client password (see engine/secrets.ts), or null for a public
   * client (spec part 5 scenario II, "public client with PKCE").
   */
  secretHash: string | null;
  /** Space-separated scope the client may be granted. Empty: any scope. */
  scope: string;
  /** Organisation identifier returned as `org_id` (spec 2.1). */
  orgId: string;
  /** Audience returned as `aud` (spec 2.3). */
  audience: string;
  /** Per-client access token lifetime in ms, or null for the engine's default. */
  accessTtlMs: number | null;
  /** Per-client refresh token lifetime in ms, or null for the engine's default. */
  refreshTtlMs: number | null;
  createdAt: number;
  /** Last change of the secret (creation or rotation). */
  secretUpdatedAt: number;
  /**
   * The redirect URIs registered for the authorization code grant (RFC 6749 §3.1.2), each
   * matched exactly (RFC 9700 §4.1.3; a loopback URI with any port, RFC 8252 §7.3).
   */
  redirectUris: string[];
  /**
   * The `grant_type` values the client may use at the token endpoint (RFC 7591 §2
   * `grant_types`); a client of a store older than issuance has `refresh_token` only.
   */
  grantTypes: string[];
  /** The operator's login app: may read and answer login requests (contract 5). */
  loginProvider: boolean;
  /** Token requests without a DPoP proof are refused (contract 8, RFC 9449 §5.2 `dpop_bound_access_tokens`). */
  requireDpop: boolean;
}

/** The settings of a client that an operator may change after creation (`client update`). */
export type ClientSettings = Pick<ClientRecord, 'redirectUris' | 'grantTypes' | 'loginProvider' | 'requireDpop'>;

/** One issued token. The token string itself is never stored, only its digest. */
export interface TokenRecord {
  /** Unique token ID in UUID form: v7 (time-ordered); stores written by older builds hold v4 too (spec 2.1 / 2.3 `jti`). */
  jti: string;
  /** base64url SHA-256 digest of the token string. */
  digest: string;
  type: TokenType;
  /** Links a refresh token and every access token minted from it (contract 2). */
  grantId: string;
  clientId: string;
  /** The user who authorised the grant (spec 2.3 `username`). */
  username: string;
  /** Subject (spec 2.3 `sub`). */
  sub: string;
  scope: string;
  audience: string;
  orgId: string;
  /** Name of the node that issued the token (spec 2.1 `node`). */
  node: string;
  issuedAt: number;
  notBefore: number;
  expiresAt: number;
  /** When the token was revoked, or null. */
  revokedAt: number | null;
  /**
   * Refresh tokens under rotation: when this token was replaced by a newer one, or null.
   * A replaced token is no longer active; presenting it again is reuse (RFC 9700 §4.14.2).
   */
  replacedAt: number | null;
  /** The jti of the refresh token that replaced this one. */
  replacedBy: string | null;
  /**
   * The RFC 7638 SHA-256 thumbprint of the DPoP key the token is bound to (RFC 9449 §6), or null
   * for a bearer token: introspection's `cnf.jkt`.
   */
  jkt: string | null;
}

/** Selects tokens for listing. Every field narrows the selection. */
export interface TokenFilter {
  clientId?: string;
  username?: string;
  type?: TokenType;
  /** Tokens in this state at time `now`. */
  state?: TokenState;
  /** Required with `state`: the instant the state is judged at. */
  now?: number;
  /** At most this many, newest first. */
  limit?: number;
  /**
   * Only tokens after this one in the listing order (newest first, ties by jti): the next page
   * of a listing whose last token this was. A keyset cursor: stable while tokens are added.
   */
  after?: { issuedAt: number; jti: string };
}

/** The states of spec part 3. A replaced refresh token counts as revoked. */
export type TokenState = 'active' | 'expired' | 'revoked';

/** Who may be revoked in bulk. Exactly one field is set. */
export type BulkSelector = { jti: string } | { username: string; clientId?: string } | { clientId: string };

/** Counts for `tokenctl status`. */
export interface StoreStats {
  clients: number;
  /** Tokens by type and state at `now`. */
  tokens: Record<TokenType, Record<TokenState, number>>;
  /** Expiry (ms) of the oldest expired token still stored, or null. */
  oldestExpiredAt: number | null;
}

/** What {@link TokenStore.findClientAndToken} found: either may be null. */
export interface ClientAndToken {
  client: ClientRecord | null;
  token: TokenRecord | null;
}

/** At most `max` tokens of one grant issued after `since` (ms): a bound on refreshes per grant. */
export interface MintLimit {
  since: number;
  max: number;
}

/** Outcome of one {@link TokenStore.revokeBulk} batch. */
export interface BulkBatch {
  /** Tokens this batch revoked. */
  revoked: number;
  /** Whether there may be more to revoke: call again, with `resume`. */
  more: boolean;
  /** Where the next batch starts, for the store's own use (opaque to the caller); none: the start. */
  resume?: string;
}

/** Outcome of {@link TokenStore.rotateRefreshToken}. */
export type RotateOutcome =
  /** The old token was current and is now replaced by the new one. */
  | 'rotated'
  /** Someone else changed the old token first (replaced or revoked it): nothing was written. */
  | 'conflict';

/** Outcome of {@link TokenStore.insertMintedAccess}. */
export type MintOutcome =
  /** The access token is stored, and its refresh token was current when it was. */
  | 'inserted'
  /** The grant minted its limit of tokens lately ({@link MintLimit}): nothing was inserted. */
  | 'limited'
  /** The refresh token was revoked or replaced: the access token is not active. */
  | 'revoked'
  /** The refresh token no longer exists (its client was deleted, or it was purged). */
  | 'unknown';

/**
 * The storage contract. Implementations: `MemoryStore`, `SqliteStore`, `PostgresStore`.
 * A single store may be used by several processes at once (the CLI beside a running server,
 * several server nodes): every answer reflects what is committed, and nothing is cached.

/** Connections of a pooled store at one moment. */
export interface PoolState {
  /** Connections open (idle or in use). */
  total: number;
  /** Connections open and idle. */
  idle: number;
  /** Callers waiting for a connection. */
  waiting: number;
}

/**
 * What a store tells whoever watches it (metrics), passed when the store is opened. Every method
 * is optional and must be cheap: it is called on the request path. Nothing here names a token.
 */
export interface StoreObserver {
  /** A commit wrote `size` writes (transactions) that arrived together: the group-commit batch. */
  commitBatch?(size: number): void;
  /** The row cache answered a read (`hit` true) or the read went to the database (false). */
  rowCache?(hit: boolean): void;
}

/** Current state of a token at `now` (spec part 3). */
export function tokenState(token: TokenRecord, now: number): TokenState {
  if (token.revokedAt !== null || token.replacedAt !== null) return 'revoked';
  if (token.expiresAt <= now) return 'expired';
  return 'active';
}

/** How a store is opened: what `openStore` passes to the `open` of each store folder's index.ts. */
export interface OpenStoreOptions {
  /** PostgreSQL: connections in the pool. */
  poolSize?: number;
  /** PostgreSQL: the longest a statement may take before the request fails with 503. */
  statementTimeoutMs?: number;
  /**
   * Create the store (SQLite file, PostgreSQL schema and tables) when there is none (default
   * true). False: throw NoStoreError instead. Only `serve`, `client create` and `migrate --to` create.
   */
  create?: boolean;
  /** The caller only reads: a SQLite store this user may not write is opened read-only. */
  readOnly?: boolean;
  /**
   * SQLite, a long-running server: WAL checkpoints on a thread of their own, and each commit synced
   * to disk on libuv's threads (sqlite/wal-sync.ts): neither on the event loop.
   */
  backgroundCheckpoints?: boolean;
  /** PostgreSQL: how long serialization failures are retried (default 2 s, a request's budget). */
  retryBudgetMs?: number;
  /** Told of commit batches and row-cache hits (metrics); see StoreObserver. */
  observer?: StoreObserver;
}
