import type { ClientRecord, StoreObserver, TokenRecord } from '../store.js';

/** Client rows kept at most: enough for any real deployment's clients. */
const MAX_KEPT_CLIENTS = 1000;
/**
 * Token rows kept at most, the oldest read forgotten first: the tokens in use right now, each
 * introspected on every call its holder makes to an API. About 450 bytes each (see keep), so at
 * most ~14 MB of heap.
 */
const MAX_KEPT_TOKENS = 30_000;
/**
 * Token rows are kept only once the store has gone this long (ms) without a commit. Under a
 * steady stream of writes (every commit forgets them all) keeping them would gain nothing, and
 * rows that outlive a few garbage collections only to be dropped grow the old generation of the
 * heap (46 → 55 MB of heap measured under the revocation load).
 */
const KEEP_AFTER_QUIET_MS = 100;
/** Fields of a token row whose values recur across rows. */
const SHARED_FIELDS = ['type', 'clientId', 'username', 'sub', 'scope', 'audience', 'orgId', 'node'] as const;

/** Sizes and clock of a {@link RowCache}; the defaults are the store's. */
export interface RowCacheOptions {
  maxClients?: number;
  maxTokens?: number;
  keepAfterQuietMs?: number;
  /** The clock (ms), for tests. */
  now?: () => number;
  /** Told of every lookup: answered from the cache or not. */
  observer?: StoreObserver;
}

/**
 * The rows the SQLite store hands out without reading them again: what introspection sees.
 *
 * A kept row is handed out only while nobody has committed since it was read, so it is exactly
 * what a read would return now. The store tells the cache (1) `sync(data_version)` first in every
 * read transaction: SQLite moves `PRAGMA data_version` on every commit of another connection,
 * and a new version forgets everything; (2) `forgetClients()` / `forgetTokens()` on each of its
 * own writes (its own commits do not move data_version). Lookups go through `client()` and
 * `token()`, inside that read transaction, with the read to do when the row is not kept.
 *
 * Client rows are kept on their first read (every request authenticates its client). Token rows
 * only on their second read lately, once the store has been quiet for a while (see readRecently
 * and KEEP_AFTER_QUIET_MS); tokens not found are never kept (a flood of made-up tokens cannot
 * fill the map). Kept token rows are frozen, client rows handed out as copies.
 */
export class RowCache {
  /** Client rows read since the last commit anyone made; null: no such client. */
  private readonly clients = new Map<string, ClientRecord | null>();
  /** Token rows by digest read since the last commit anyone made. */
  private readonly tokens = new Map<string, TokenRecord>();
  /** One instance of each value of SHARED_FIELDS in the kept token rows. */
  private readonly shared = new Map<string, string>();
  /** Digests read lately, by hash (see readRecently): 2^20 bits each, 128 KiB. */
  private seen = new Uint32Array(1 << 15);
  private seenBefore = new Uint32Array(1 << 15);
  private seenReads = 0;
  /** When the kept token rows were last forgotten. */
  private forgotAt = 0;
  /** `PRAGMA data_version` when the kept rows were read. */
  private keptVersion = -1;
  private readonly maxClients: number;
  private readonly maxTokens: number;
  private readonly keepAfterQuietMs: number;
  private readonly now: () => number;
  private readonly observer: StoreObserver | undefined;

  constructor(options: RowCacheOptions = {}) {
    this.maxClients = options.maxClients ?? MAX_KEPT_CLIENTS;
    this.maxTokens = options.maxTokens ?? MAX_KEPT_TOKENS;
    this.keepAfterQuietMs = options.keepAfterQuietMs ?? KEEP_AFTER_QUIET_MS;
    this.now = options.now ?? (() => Date.now());
    this.observer = options.observer;
  }

  /** Forgets every kept row when `version` (data_version, read in the current transaction) moved on. */
  sync(version: number): void {
    if (version !== this.keptVersion) {
      this.clients.clear();
      this.forgetTokens();
      this.keptVersion = version;
    }
  }

  /** The client `id`: kept, or `read` (and then kept). A copy, lists too: the caller may change it. */
  client(id: string, read: (id: string) => ClientRecord | null): ClientRecord | null {
    let client = this.clients.get(id);
    this.observer?.rowCache?.(client !== undefined);
    if (client === undefined) {
      client = read(id);
      if (this.clients.size >= this.maxClients) this.clients.clear();
      this.clients.set(id, client);
    }
    return client && { ...client, redirectUris: [...client.redirectUris], grantTypes: [...client.grantTypes] };
  }

  /** The token with `digest`: kept, or `read` (kept on its second read lately, when quiet). */
  token(digest: string, read: (digest: string) => TokenRecord | null): TokenRecord | null {
    const kept = this.tokens.get(digest);
    this.observer?.rowCache?.(kept !== undefined);
    if (kept !== undefined) return kept;
    const token = read(digest);
    if (token !== null && this.now() - this.forgotAt >= this.keepAfterQuietMs && this.readRecently(token.digest)) this.keep(token);
    return token;
  }

  /** This connection wrote to the clients table. */
  forgetClients(): void {
    this.clients.clear();
  }

  /** This connection wrote tokens (or anything: every write forgets the token rows). */
  forgetTokens(): void {
    // Not when empty: clear() gives the map a new table each time, and as the map lives in the
    // old generation, so would every one of those (measured: +10 MB RSS under revocations).
    if (this.tokens.size > 0) this.tokens.clear();
    this.forgotAt = this.now();
  }

  /**
   * Keeps a token row (the oldest kept is forgotten when full). The values many tokens share
   * (type, client, user, scope, audience, …) are kept once each: ~690 → ~450 bytes a row.
   */
  private keep(token: TokenRecord): void {
    if (this.tokens.size >= this.maxTokens) this.tokens.delete(this.tokens.keys().next().value!);
    if (this.shared.size >= this.maxTokens) this.shared.clear();
    for (const field of SHARED_FIELDS) {
      const value = token[field];
      const one = this.shared.get(value);
      if (one === undefined) this.shared.set(value, value);
      else (token as unknown as Record<string, string>)[field] = one;
    }
    // Frozen: it is handed out to every later reader, none of whom may change it for the others.
    this.tokens.set(token.digest, Object.freeze(token));
  }

  /**
   * Whether the token with `digest` was read lately and not kept. A token is kept on its second
   * read within about maxTokens to twice that many reads of rows not kept, not on its first,
   * so that tokens read once each (a stream of tokens wider than the map) neither push out the
   * ones in use nor churn memory by being kept only to be dropped (measured: 200,000 tokens read
   * in turn, every row kept on its first read: −36% req/s and +40 MB RSS; kept on the second:
   * within the noise of not keeping any). A bit per hash of the digest (uniformly random itself)
   * in two generations: every maxTokens reads, the older is cleared and becomes the newer.
   */
  private readRecently(digest: string): boolean {
    if (++this.seenReads > this.maxTokens) {
      [this.seen, this.seenBefore] = [this.seenBefore.fill(0), this.seen];
      this.seenReads = 0;
    }
    let hash = 0x811c9dc5; // FNV-1a of the first 8 characters
    for (let i = 0; i < 8; i++) hash = Math.imul(hash ^ digest.charCodeAt(i), 0x01000193);
    const bit = (hash >>> 0) % (this.seen.length * 32);
    const word = bit >>> 5;
    const mask = 1 << (bit & 31);
    if (((this.seen[word]! | this.seenBefore[word]!) & mask) !== 0) return true;
    this.seen[word]! |= mask;
    return false;
  }
}
