/**
 * The token store: the only place tokenctl keeps state.
 *
 * The engine talks to this interface and nothing else; SQLite (`sqlite/`), PostgreSQL
 * (`postgres/`) and the in-memory reference (`memory/`) implement it. Stores never see a raw
 * token or client secret: tokens arrive as SHA-256 digests, secrets as salted scrypt hashes.
 *
 * Every operation that must be atomic is one method here (rotation, grant revocation, bulk
 * revocation), never a transaction handed to the caller: better-sqlite3 transactions cannot span
 * an `await`, and PostgreSQL needs conditional updates or row locks instead.
 *
 * All times are integer milliseconds since the Unix epoch.
 */

import type { EventStore, RevocationEvent } from './events.js';

// The outbox part of the interface lives in events.ts; its names are the store interface's too.
export type * from './events.js';
// The audit trail's lines (audit.ts), which the event store writes too (a signing key's rotation).
export type * from './audit.js';
import type { AuditEntry, AuditFilter } from './audit.js';
export { DuplicateReceiverError } from './events.js';

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
}

/** One issued token. The token string itself is never stored, only its digest. */
export interface TokenRecord {
  /** Unique token ID in UUID form, v7 (time-ordered) since 2026-11, v4 before (spec 2.1 / 2.3 `jti`). */
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
 */
export interface TokenStore extends EventStore {
  /** A short description for operators: the file path or database URL without password. */
  readonly location: string;

  /** Current schema version of the store. */
  schemaVersion(): Promise<number>;

  // ---- clients --------------------------------------------------------------------------

  /**
   * Inserts a client. Rejects with {@link DuplicateClientError} if the id exists. With `audit`,
   * that line is written in the same transaction: an operator's change and its audit line commit
   * together or not at all (so do deleteClient's, updateClientSecret's and the receivers').
   */
  createClient(client: ClientRecord, audit?: AuditEntry): Promise<void>;
  getClient(id: string): Promise<ClientRecord | null>;
  listClients(): Promise<ClientRecord[]>;
  /**
   * Deletes a client and every token issued to it. Returns false if there was none. With `event`,
   * and only if it deleted the client, the event is written in the same transaction (see
   * {@link revokeToken}); so is `audit`.
   */
  deleteClient(id: string, event?: RevocationEvent, audit?: AuditEntry): Promise<boolean>;
  /** Replaces a client's secret hash (with `audit`, and that line when it did). Returns false if there is no such client. */
  updateClientSecret(id: string, secretHash: string, at: number, audit?: AuditEntry): Promise<boolean>;

  // ---- tokens ---------------------------------------------------------------------------

  /** Inserts tokens (an access/refresh pair) in one transaction. */
  insertTokens(tokens: TokenRecord[]): Promise<void>;
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
  /** Counts exactly the tokens {@link revokeBulk}, repeated to the end, would revoke at `now`. */
  countRevocable(selector: BulkSelector, now: number): Promise<number>;

  /** How many tokens {@link listTokens} would list for the filter without `limit` and `after`. */
  countTokens(filter: TokenFilter): Promise<number>;

  /**
   * Revokes one token if it is not revoked yet. Returns true if this call revoked it
   * (RFC 7009 §2.2: the first revocation wins, later ones are no-ops). With `cascadeGrant`, and
   * only if this call revoked it, the whole grant is revoked in the same transaction, exactly as
   * {@link revokeGrant} does (RFC 7009 §2.1: revoking a refresh token ends its access tokens).
   * With `audit`, and only if this call revoked it, the entry is appended in the same
   * transaction too: one durable commit for the revocation and its trail.
   *
   * With `event`, and only if this call revoked it, the security event is written to the outbox
   * in the same transaction, with one delivery per registered receiver (events.ts); with no
   * receiver registered, nothing is written. The same holds for every `event` argument below.
   */
  revokeToken(jti: string, at: number, cascadeGrant?: boolean, audit?: AuditEntry, event?: RevocationEvent): Promise<boolean>;

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
   * committed yet is refused. Revoking a grant twice is harmless. With `audit`, the entry is
   * appended in the same transaction when any token changed, its `count` set to how many.
   * Returns how many tokens changed. With `event`, written as {@link revokeToken} says when any
   * token changed.
   */
  revokeGrant(grantId: string, at: number, audit?: AuditEntry, event?: RevocationEvent): Promise<number>;

  /**
   * One batch of a bulk revocation, as one atomic step that holds the store briefly: revokes
   * the live (not yet revoked, not yet expired at `at`) tokens the selector names, and whole
   * grants as {@link revokeGrant} does (a user's or a client's grants; for a `jti`, the token, or
   * its grant when it is a refresh token), at most about `limit` of them in this call. A replaced
   * refresh token that is not yet revoked counts as revocable; tokens already expired are left as
   * they are. With `audit`, the entry is appended in the same transaction when any token changed,
   * its `count` set to how many.
   *
   * The caller repeats while `more` is true, passing the `resume` of the last answer (a store may
   * use it to skip what it has done, so that a large revocation costs what it revokes, not the
   * square of it). Once a call answers `more: false`, every grant the
   * selector named when that call ran is revoked, and so stays (see revokeGrant): tokens minted
   * between two batches are revoked by a later one.
   *
   * With `event` (the caller passes the same one to every batch): one event for the whole bulk
   * revocation, not one per batch nor per token. It is written in the transaction of the call that
   * answers `more: false`, when that call revoked any token or `resume` was given (earlier batches
   * ran): once the event is out, everything it names is revoked.
   */
  revokeBulk(
    selector: BulkSelector,
    at: number,
    limit: number,
    audit?: AuditEntry,
    resume?: string,
    event?: RevocationEvent,
  ): Promise<BulkBatch>;

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

  /**
   * Deletes up to `batchSize` tokens that expired, or were revoked, before `before`. A replaced
   * refresh token stays until it expires or is revoked, so that its reuse is still detected.
   * Returns how many were deleted; the caller repeats until 0, so that one call never holds
   * the store for long. With `audit`, and when it deleted any, the entry is appended in the same
   * transaction with `count` set to how many: the trail holds exactly what was deleted, however
   * the purge ends.
   */
  purgeBatch(before: number, batchSize: number, audit?: AuditEntry): Promise<number>;

  /** How many tokens {@link purgeBatch} would delete in all for this `before`. */
  countPurgeable(before: number): Promise<number>;

  /**
   * Counts at `now`. With `clientId`, the token counts and the oldest expiry are that client's
   * only (counted in the store, never by loading the tokens); `clients` is always the total.
   */
  stats(now: number, clientId?: string): Promise<StoreStats>;

  // ---- audit ------------------------------------------------------------------------------

  appendAudit(entry: AuditEntry): Promise<void>;
  listAudit(filter: AuditFilter): Promise<AuditEntry[]>;

  /** Checks the store answers (for /healthz). Rejects if it does not. */
  ping(): Promise<void>;

  /** Releases files and connections. The store is unusable afterwards. */
  close(): Promise<void>;

  /**
   * A pooled store only (PostgreSQL): its connections now, for metrics. Cheap and synchronous;
   * a store without a pool leaves it undefined.
   */
  poolState?(): PoolState;
}

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

/** A client with this id exists already. */
export class DuplicateClientError extends Error {
  constructor(readonly clientId: string) {
    super(`a client with id "${clientId}" already exists`);
    this.name = 'DuplicateClientError';
  }
}

/** The file or database is not a tokenctl store. */
export class NotAStoreError extends Error {
  constructor(
    readonly location: string,
    reason: string,
  ) {
    super(`${location} is not a tokenctl store: ${reason}`);
    this.name = 'NotAStoreError';
  }
}

/** The store cannot be opened where it was pointed at: a missing directory or file. */
export class StoreLocationError extends Error {
  constructor(
    message: string,
    /** What to do about it, when the message does not say. */
    readonly hint?: string,
  ) {
    super(message);
    this.name = 'StoreLocationError';
  }
}

/**
 * There is no store where the command looked (no file, an empty file, or a PostgreSQL schema
 * without tokenctl's tables), and the command may not create one: only `serve`, `client create`
 * and `migrate --to` do, so that a mistyped location never answers from a new, empty store.
 */
export class NoStoreError extends Error {
  constructor(
    readonly location: string,
    reason: string,
  ) {
    super(`no tokenctl store at ${location}: ${reason}`);
    this.name = 'NoStoreError';
  }
}

/** The store was written by a newer tokenctl. */
export class SchemaTooNewError extends Error {
  constructor(
    readonly location: string,
    readonly found: number,
    readonly supported: number,
  ) {
    super(
      `${location} has schema version ${found}, but this tokenctl knows only up to ${supported}: upgrade tokenctl`,
    );
    this.name = 'SchemaTooNewError';
  }
}

/** The store cannot be reached right now (database down, file locked past the busy timeout). */
export class StoreUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreUnavailableError';
  }
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
