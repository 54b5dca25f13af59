import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import {
  DuplicateClientError,
  NoStoreError,
  NotAStoreError,
  StoreLocationError,
  StoreUnavailableError,
  TOKEN_TYPES,
  type AuditEntry,
  type AuditFilter,
  type BulkBatch,
  type BulkSelector,
  type ClientAndToken,
  type ClientRecord,
  type MintLimit,
  type MintOutcome,
  type RotateOutcome,
  type StoreObserver,
  type StoreStats,
  type TokenFilter,
  type TokenRecord,
  type TokenState,
  type TokenStore,
  type TokenType,
} from '../store.js';
import { BackgroundCheckpointer } from './checkpointer.js';
import { GroupCommit } from './group-commit.js';
import { identify, LATEST_SCHEMA_VERSION, migrate } from './migrations.js';
import { countTokensSql, listTokensSql, prepareStatements, selectorKind, tokenFromRow, type Statement } from './statements.js';

/** How long a write waits for another process (a running server, a CLI command) to finish its own. */
const BUSY_TIMEOUT_MS = 5000;
const SQLITE_HEADER = Buffer.from('SQLite format 3\0', 'latin1');
/** Page cache per connection, KiB (PRAGMA cache_size takes a negative number for KiB). */
const PAGE_CACHE_KIB = 16 * 1024;
/**
 * WAL frames (pages) after which a commit checkpoints them into the database file. SQLite's
 * default, 1,000 (4 MB), makes every seventh or so group commit of a busy server also copy a
 * thousand scattered pages into the file and fsync it, on the event loop: writes with random
 * keys (digest, jti, grant indexes) dirty a few leaves each, so a larger WAL coalesces many
 * more rewrites of the same page per checkpoint. 10,000 frames is about 40 MB of WAL on disk
 * (not memory: the wal-index in shared memory is ~80 KB). Durability is unchanged: a commit is
 * synced to the WAL before it is acknowledged, whenever it is checkpointed.
 */
const WAL_AUTOCHECKPOINT_PAGES = 10_000;
/** After a checkpoint, the WAL file is truncated back to this size (bytes) when it grew past it. */
const WAL_SIZE_LIMIT = 64 * 1024 * 1024;
/** Client rows kept at most (see getClient): enough for any real deployment's clients. */
const MAX_KEPT_CLIENTS = 1000;
/**
 * Token rows kept at most (see findClientAndToken), the oldest read forgotten first: the tokens
 * in use right now, each introspected on every call its holder makes to an API. About 450 bytes
 * each (see keep), so at most ~14 MB of heap.
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

/**
 * The SQLite {@link TokenStore}: one file, shared safely by a running server and CLI commands.
 *
 * WAL lets readers proceed beside a writer; `synchronous=FULL` makes every acknowledged
 * revocation durable across power loss; the busy timeout makes a second writer wait instead of
 * failing, and a wait past it surfaces as {@link StoreUnavailableError}. Every atomic operation
 * is one statement or one transaction, and every write runs inside a BEGIN IMMEDIATE group commit
 * (see GroupCommit; immediate, so that a transaction never
 * has to upgrade a stale read snapshot to a write and fail with SQLITE_BUSY_SNAPSHOT).
 */
export class SqliteStore implements TokenStore {
  private closed = false;
  private readonly st: ReturnType<typeof prepareStatements>;
  /** listTokens statements by filter shape: each shape is prepared once, and can use its index. */
  private readonly listing = new Map<string, Statement>();
  /** Client rows read since the last commit anyone made (see getClient); null: no such client. */
  private readonly clients = new Map<string, ClientRecord | null>();
  /** Token rows by digest read since the last commit anyone made (see findClientAndToken). */
  private readonly tokens = new Map<string, TokenRecord>();
  /** One instance of each value of SHARED_FIELDS in the kept token rows. */
  private readonly shared = new Map<string, string>();
  /** Digests read lately, by hash (see readRecently): 2^20 bits each, 128 KiB. */
  private seen = new Uint32Array(1 << 15);
  private seenBefore = new Uint32Array(1 << 15);
  private seenReads = 0;
  /** When the kept token rows were last forgotten (Date.now()). */
  private forgotAt = 0;
  /** `PRAGMA data_version` when the kept rows were read. */
  private keptVersion = -1;
  private readonly insertMany: Database.Transaction<(tokens: TokenRecord[]) => void>;
  private readonly revokeTx: Database.Transaction<(jti: string, at: number, cascade: boolean, audit: AuditEntry | undefined) => boolean>;
  private readonly mintTx: Database.Transaction<(access: TokenRecord, refreshJti: string, limit: MintLimit | undefined) => MintOutcome>;
  private readonly statsTx: Database.Transaction<(now: number, clientId?: string) => StoreStats>;
  private readonly readTx: Database.Transaction<(batch: PendingRead[]) => ClientAndToken[]>;
  /** findClientAndToken calls waiting for the next read batch. */
  private readQueue: PendingRead[] = [];
  private readScheduled = false;
  private readonly rotateTx: Database.Transaction<(oldJti: string, issued: TokenRecord[], at: number, revokeJti?: string) => RotateOutcome>;
  /** Every write goes through here: writes that arrive together share one commit. */
  private readonly writes: GroupCommit;
  /** With `backgroundCheckpoints`: the thread that checkpoints the WAL (checkpointer.ts). */
  private checkpointer: BackgroundCheckpointer | undefined;

  private constructor(
    private readonly db: Database.Database,
    readonly location: string,
  ) {
    this.st = prepareStatements(db);
    this.writes = new GroupCommit(db, (error) => mapError(error, location));

    this.insertMany = db.transaction((tokens: TokenRecord[]) => {
      for (const t of tokens) this.st.insertToken.run(t);
    });
    this.revokeTx = db.transaction((jti: string, at: number, cascade: boolean, audit: AuditEntry | undefined) => {
      if (cascade) {
        const t = tokenFromRow(this.st.byJti.get(jti) as unknown[] | undefined);
        if (!t || this.st.revokeOne.run(at, jti).changes !== 1) return false;
        this.st.revokeGrant.run(at, t.grantId);
      } else if (this.st.revokeOne.run(at, jti).changes !== 1) {
        return false;
      }
      if (audit) this.st.insertAudit.run(audit);
      return true;
    });
    // Writers take turns on the file (BEGIN IMMEDIATE), so nothing commits between check and insert.
    this.mintTx = db.transaction((access: TokenRecord, refreshJti: string, limit: MintLimit | undefined) => {
      const state = this.st.currentState.get(refreshJti) as { revoked: number; grantId: string } | undefined;
      if (state === undefined) return 'unknown';
      if (state.revoked) return 'revoked';
      if (limit && (this.st.recentOfGrant.get({ grantId: state.grantId, since: limit.since, max: limit.max }) as number) >= limit.max) return 'limited';
      this.st.insertToken.run(access);
      return 'inserted';
    });
    this.rotateTx = db.transaction((oldJti: string, issued: TokenRecord[], at: number, revokeJti?: string) => {
      const next = issued.find((t) => t.type === 'refresh_token')?.jti ?? null;
      if (revokeJti === undefined) {
        // The conditional update decides the race: only one caller can see changes === 1.
        if (this.st.replace.run(at, next, oldJti).changes !== 1) return 'conflict';
      } else {
        if (this.st.revokeLost.run({ at, lost: revokeJti, old: oldJti, next }).changes !== 1) return 'conflict';
        this.st.revokeLostAccess.run({ at, lost: revokeJti, old: oldJti });
        this.st.repoint.run(at, next, oldJti);
      }
      for (const t of issued) this.st.insertToken.run(t);
      return 'rotated';
    });
    this.readTx = db.transaction((batch: PendingRead[]) => {
      const version = this.st.dataVersion.get() as number; // the first read: the snapshot starts here
      return batch.map(({ clientId, digest }) => this.findInSnapshot(clientId, digest, version));
    });
    // A read transaction, so that the counts describe one moment even while others write.
    this.statsTx = db.transaction((now: number, clientId?: string) => {
      const tokens = Object.fromEntries(TOKEN_TYPES.map((type) => [type, { active: 0, expired: 0, revoked: 0 }])) as StoreStats['tokens'];
      const [byState, oldest] = clientId === undefined ? [this.st.tokenStats, this.st.oldestExpired] : [this.st.clientTokenStats, this.st.clientOldestExpired];
      const params = clientId === undefined ? { now } : { now, clientId };
      for (const row of byState.all(params) as { type: TokenType; state: TokenState; n: number }[]) tokens[row.type][row.state] = row.n;
      const clients = (this.st.countClients.get() as { n: number }).n;
      const oldestExpiredAt = (oldest.get(params) as { at: number | null }).at;
      return { clients, tokens, oldestExpiredAt };
    });
  }

  /**
   * Opens (and with `create`, the default, creates) the store at `file`. A new file is created
   * readable by its owner only; SQLite gives the -wal and -shm files the same mode. Nothing is
   * written to a file before it is known to be empty or a tokenctl store.
   */
  static async open(file: string, options: SqliteOpenOptions = {}): Promise<SqliteStore> {
    const location = path.resolve(file);
    const dir = path.dirname(location);
    const create = options.create ?? true;
    if (!fs.statSync(dir, { throwIfNoEntry: false })?.isDirectory()) {
      if (!create) throw new NoStoreError(location, `the directory ${dir} does not exist`);
      throw new StoreLocationError(`cannot open the store ${location}: the directory ${dir} does not exist`, `create it first (mkdir -p ${dir}), or check --db (or TOKENCTL_DB)`);
    }
    if (!fs.existsSync(location)) {
      if (!create) throw new NoStoreError(location, 'the file does not exist');
      createPrivateFile(location);
    }
    checkHeader(location);
    // A store the user may read but not write (a 0444 file, or one in a directory they cannot
    // write, where SQLite cannot make its -wal and -shm files) is opened read-only for reading.
    const readonly = options.readOnly === true && !writable(location);
    if (!readonly && !canWrite(location)) {
      throw new StoreLocationError(
        `the store ${location} cannot be written by this user (its mode, its directory's, a read-only file system or an immutable file), and this command writes to it: run it as a user who may write it, or make it writable`,
      );
    }
    let db: Database.Database | undefined;
    try {
      db = readonly ? openReadOnly(location) : new Database(location, { fileMustExist: true, timeout: BUSY_TIMEOUT_MS });
      // Identified before the first write below, so that a foreign file stays untouched.
      const version = identify(db, location);
      if (version === 0 && !create) throw new NoStoreError(location, 'the file is empty');
      if (readonly) {
        if (version < LATEST_SCHEMA_VERSION) {
          throw new StoreLocationError(`the store ${location} needs an upgrade to schema version ${LATEST_SCHEMA_VERSION}, and this user may not write it: run any writing command (e.g. tokenctl serve) as its owner once`);
        }
        db.pragma(`cache_size = -${PAGE_CACHE_KIB}`);
        return new SqliteStore(db, location);
      }
      if (version === 0) makePrivate(location); // an empty file someone else created
      switchToWal(db, location);
      db.pragma('synchronous = FULL');
      db.pragma('foreign_keys = ON');
      // 16 MiB of page cache instead of SQLite's 2 MB: a large store's interior B-tree pages (and
      // many leaves) stay in memory, so a lookup in 1M tokens costs about what it does in 1k
      // (32 MiB measured the same on the 1M store, and cost 16 MB more RSS under writes).
      // Bounded, so that a server stays well within its memory budget. Not mmap: mapped pages
      // would count against the process for the whole file.
      db.pragma(`cache_size = -${PAGE_CACHE_KIB}`);
      db.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
      db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT}`);
      // Only a store behind takes the write lock to migrate: a current one opens without it, so a
      // command does not wait behind a busy server's commit just to start.
      if (version < LATEST_SCHEMA_VERSION) migrate(db, location);
      const store = new SqliteStore(db, location);
      if (options.backgroundCheckpoints) store.checkpointInBackground();
      return store;
    } catch (error) {
      db?.close();
      throw mapError(error, location);
    }
  }

  async schemaVersion(): Promise<number> {
    return this.run(() => this.db.pragma('user_version', { simple: true }) as number);
  }

  async createClient(client: ClientRecord): Promise<void> {
    await this.write(() => {
      this.clients.clear();
      try {
        this.st.insertClient.run(client);
      } catch (error) {
        if (error instanceof Database.SqliteError && /^SQLITE_CONSTRAINT_(PRIMARYKEY|UNIQUE)$/.test(error.code)) {
          throw new DuplicateClientError(client.id);
        }
        throw error;
      }
    });
  }

  /**
   * Every request authenticates its client, so client rows are kept between reads, but only for
   * as long as nothing has been committed: by another connection (`PRAGMA data_version` moves on
   * each of their commits) or by this one to the clients table (the writes below forget them).
   * A kept row is therefore exactly what a read would return now.
   */
  async getClient(id: string): Promise<ClientRecord | null> {
    return this.run(() => this.clientAt(id, this.st.dataVersion.get() as number));
  }

  /**
   * The request path of all three endpoints, batched: the calls made during one turn of the event
   * loop are answered together, in the check phase that follows (setImmediate), in ONE read
   * transaction. Every request of the batch was read from its socket before that transaction
   * starts, so each answer still reflects every commit made before its request arrived (a
   * revocation or a rotated secret, by any process), as a read per request did; one transaction
   * for the batch saves the file-lock system calls of one per request.
   *
   * Token rows are kept like client rows, and on the same condition: a kept row is handed out
   * only while `PRAGMA data_version`, read first in that transaction, shows that nobody has
   * committed since it was read, so it is exactly what a read would return now; every write of
   * this connection forgets them too. Tokens not found are not kept (a flood of made-up tokens
   * cannot fill the map); kept rows are frozen. A failure of the transaction rejects every call
   * of its batch.
   */
  findClientAndToken(clientId: string, digest: string | null): Promise<ClientAndToken> {
    if (this.closed) return Promise.reject(new Error(`the store ${this.location} is closed`));
    return new Promise<ClientAndToken>((resolve, reject) => {
      this.readQueue.push({ clientId, digest, resolve, reject });
      if (!this.readScheduled) {
        this.readScheduled = true;
        setImmediate(() => this.flushReads());
      }
    });
  }

  /** Answers the queued findClientAndToken calls in one read transaction (see findClientAndToken). */
  private flushReads(): void {
    const batch = this.readQueue;
    this.readQueue = [];
    this.readScheduled = false;
    if (batch.length === 0) return;
    let answers: ClientAndToken[];
    try {
      answers = this.readTx.deferred(batch);
    } catch (error) {
      const mapped = mapError(error, this.location);
      for (const r of batch) r.reject(mapped);
      return;
    }
    answers.forEach((answer, i) => batch[i]!.resolve(answer));
  }

  /** One queued read, inside readTx (`version`: data_version of its snapshot). */
  private findInSnapshot(clientId: string, digest: string | null, version: number): ClientAndToken {
    const client = this.clientAt(clientId, version); // forgets kept rows if version moved on
    if (digest === null) return { client, token: null };
    const kept = this.tokens.get(digest);
    if (kept !== undefined) return { client, token: kept };
    const token = tokenFromRow(this.st.byDigest.get(digest) as unknown[] | undefined);
    if (token !== null && Date.now() - this.forgotAt >= KEEP_AFTER_QUIET_MS && this.readRecently(token.digest)) this.keep(token);
    return { client, token };
  }

  /**
   * Keeps a token row (the oldest kept is forgotten when full). The values many tokens share
   * (type, client, user, scope, audience, …) are kept once each: ~690 → ~450 bytes a row.
   */
  private keep(token: TokenRecord): void {
    if (this.tokens.size >= MAX_KEPT_TOKENS) this.tokens.delete(this.tokens.keys().next().value!);
    if (this.shared.size >= MAX_KEPT_TOKENS) this.shared.clear();
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
   * read within about MAX_KEPT_TOKENS to twice that many reads of rows not kept, not on its first,
   * so that tokens read once each (a stream of tokens wider than the map) neither push out the
   * ones in use nor churn memory by being kept only to be dropped (measured: 200,000 tokens read
   * in turn, every row kept on its first read: −36% req/s and +40 MB RSS; kept on the second:
   * within the noise of not keeping any). A bit per hash of the digest (uniformly random itself)
   * in two generations: every MAX_KEPT_TOKENS reads, the older is cleared and becomes the newer.
   */
  private readRecently(digest: string): boolean {
    if (++this.seenReads > MAX_KEPT_TOKENS) {
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

  /** Forgets the kept rows when `version` (data_version read in the current transaction) moved on. */
  private syncKept(version: number): void {
    if (version !== this.keptVersion) {
      this.clients.clear();
      this.forgetTokens();
      this.keptVersion = version;
    }
  }

  private forgetTokens(): void {
    // Not when empty: clear() gives the map a new table each time, and as the map lives in the
    // old generation, so would every one of those (measured: +10 MB RSS under revocations).
    if (this.tokens.size > 0) this.tokens.clear();
    this.forgotAt = Date.now();
  }

  /** The client row as of `version` (data_version read in the current transaction). */
  private clientAt(id: string, version: number): ClientRecord | null {
    this.syncKept(version);
    let client = this.clients.get(id);
    if (client === undefined) {
      const row = this.st.getClient.get(id) as ClientRecord | undefined;
      client = row ?? null;
      if (this.clients.size >= MAX_KEPT_CLIENTS) this.clients.clear();
      this.clients.set(id, client);
    }
    return client && { ...client }; // a copy: the caller may change it
  }

  async listClients(): Promise<ClientRecord[]> {
    return this.run(() => this.st.listClients.all() as ClientRecord[]);
  }

  async deleteClient(id: string): Promise<boolean> {
    return this.write(() => {
      this.clients.clear();
      return this.st.deleteClient.run(id).changes === 1;
    });
  }

  async updateClientSecret(id: string, secretHash: string, at: number): Promise<boolean> {
    return this.write(() => {
      this.clients.clear();
      return this.st.updateSecret.run(secretHash, at, id).changes === 1;
    });
  }

  async insertTokens(tokens: TokenRecord[]): Promise<void> {
    await this.write(() => this.insertMany(tokens));
  }

  async findTokenByDigest(digest: string): Promise<TokenRecord | null> {
    return this.run(() => tokenFromRow(this.st.byDigest.get(digest) as unknown[] | undefined));
  }

  async findTokenByJti(jti: string): Promise<TokenRecord | null> {
    return this.run(() => tokenFromRow(this.st.byJti.get(jti) as unknown[] | undefined));
  }

  async scanTokens(afterJti: string | null, limit: number): Promise<TokenRecord[]> {
    return this.run(() => {
      const rows = (afterJti === null ? this.st.scanFirst.all(Math.max(0, limit)) : this.st.scanAfter.all(afterJti, Math.max(0, limit))) as unknown[][];
      return rows.map((row) => tokenFromRow(row)!);
    });
  }

  async findTokensByJti(jtis: readonly string[]): Promise<TokenRecord[]> {
    if (jtis.length === 0) return [];
    return this.run(() => (this.st.byJtis.all(JSON.stringify(jtis)) as unknown[][]).map((row) => tokenFromRow(row)!));
  }

  async listTokens(filter: TokenFilter): Promise<TokenRecord[]> {
    return this.run(() => {
      const sql = listTokensSql(filter);
      let stmt = this.listing.get(sql);
      if (!stmt) this.listing.set(sql, (stmt = this.db.prepare(sql)));
      const { after, ...rest } = filter;
      const params = { ...rest, now: filter.now ?? Date.now(), limit: filter.limit ?? -1, ...(after ? { afterAt: after.issuedAt, afterJti: after.jti } : {}) };
      return stmt.all(params) as TokenRecord[];
    });
  }

  async countTokens(filter: TokenFilter): Promise<number> {
    return this.run(() => {
      const sql = countTokensSql(filter);
      let stmt = this.listing.get(sql);
      if (!stmt) this.listing.set(sql, (stmt = this.db.prepare(sql)));
      const { clientId, username, type, state } = filter;
      const params = Object.fromEntries(Object.entries({ clientId, username, type, state }).filter(([, v]) => v !== undefined));
      return (stmt.get({ ...params, ...(state !== undefined ? { now: filter.now ?? Date.now() } : {}) }) as { n: number }).n;
    });
  }

  async countRevocable(selector: BulkSelector, now: number): Promise<number> {
    return this.run(() => (this.st.bulk[selectorKind(selector)].count.get({ ...selector, at: now }) as { n: number }).n);
  }

  async revokeToken(jti: string, at: number, cascadeGrant = false, audit?: AuditEntry): Promise<boolean> {
    return this.write(() => this.revokeTx(jti, at, cascadeGrant, audit));
  }

  async insertMintedAccess(access: TokenRecord, refreshJti: string, limit?: MintLimit): Promise<MintOutcome> {
    return this.write(() => this.mintTx(access, refreshJti, limit));
  }

  /**
   * Writers take turns on the file (every write is BEGIN IMMEDIATE), so a mint that commits after
   * this finds its refresh token revoked, and one that committed before is revoked here.
   */
  async revokeGrant(grantId: string, at: number, audit?: AuditEntry): Promise<number> {
    return this.write(() => this.withAudit(this.st.revokeGrant.run(at, grantId).changes, audit));
  }

  async revokeBulk(selector: BulkSelector, at: number, limit: number, audit?: AuditEntry, resume?: string): Promise<BulkBatch> {
    const kind = selectorKind(selector);
    return this.write(() => {
      // A jti names one token or one grant: one step. Users and clients go a window of rows at a
      // time, so that a large revocation never holds the write lock for long (statements.ts).
      if (kind === 'jti') return { revoked: this.withAudit(this.st.bulk.jti.revoke.run({ ...selector, at }).changes, audit), more: false };
      const st = this.st.bulk[kind];
      const batch = Math.max(1, limit);
      const after = resume === undefined ? 0 : Number(resume);
      const { n, last } = st.window.get({ ...selector, after, limit: batch }) as { n: number; last: number | null };
      if (n === 0 || last === null) return { revoked: 0, more: false };
      const revoked = this.withAudit(st.revokeWindow.run({ ...selector, at, after, last }).changes, audit);
      return { revoked, more: n === batch, resume: String(last) };
    });
  }

  /** Appends `audit` (its count set to `changed`) when anything changed; inside a write step. */
  private withAudit(changed: number, audit: AuditEntry | undefined): number {
    if (changed > 0 && audit) this.st.insertAudit.run({ ...audit, count: changed });
    return changed;
  }

  async rotateRefreshToken(oldJti: string, issued: TokenRecord[], at: number, revokeJti?: string): Promise<RotateOutcome> {
    return this.write(() => this.rotateTx(oldJti, issued, at, revokeJti));
  }

  async purgeBatch(before: number, batchSize: number, audit?: AuditEntry): Promise<number> {
    return this.write(() => {
      const deleted = this.st.purge.run({ before, limit: batchSize }).changes;
      if (audit && deleted > 0) this.st.insertAudit.run({ ...audit, count: deleted });
      return deleted;
    });
  }

  async countPurgeable(before: number): Promise<number> {
    return this.run(() => (this.st.countPurgeable.get({ before }) as { n: number }).n);
  }

  async stats(now: number, clientId?: string): Promise<StoreStats> {
    return this.run(() => this.statsTx.deferred(now, clientId));
  }

  async appendAudit(entry: AuditEntry): Promise<void> {
    await this.write(() => this.st.insertAudit.run(entry));
  }

  async listAudit(filter: AuditFilter): Promise<AuditEntry[]> {
    const { since = null, jti = null, clientId = null, limit = -1 } = filter;
    return this.run(() => this.st.listAudit.all({ since, jti, clientId, limit }) as AuditEntry[]);
  }

  async ping(): Promise<void> {
    this.run(() => this.st.ping.get());
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.writes.flush(); // acknowledge nothing that is not committed
    this.flushReads();
    this.closed = true;
    await this.checkpointer?.stop();
    this.db.close(); // the last connection to close checkpoints what is left
  }

  /**
   * Leaves WAL checkpoints to a thread of their own (checkpointer.ts) instead of a commit on the
   * event loop. Should the thread fail, SQLite checkpoints automatically again.
   */
  private checkpointInBackground(): void {
    this.db.pragma('wal_autocheckpoint = 0');
    this.checkpointer = new BackgroundCheckpointer(
      this.location,
      () => {
        if (!this.closed) this.db.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
      },
      { frames: WAL_AUTOCHECKPOINT_PAGES },
    );
  }

  /**
   * Queues one synchronous write step for the next group commit (see GroupCommit). The kept token
   * rows are forgotten as the step runs: this connection's own commits do not move data_version.
   * Nothing reads between the step and its commit (both run in one synchronous flush).
   */
  private write<T>(step: () => T): Promise<T> {
    if (this.closed) return Promise.reject(new Error(`the store ${this.location} is closed`));
    return this.writes.run(() => {
      this.forgetTokens();
      return step();
    });
  }

  /** Runs one synchronous database step, with the store's errors in place of SQLite's. */
  private run<T>(step: () => T): T {
    if (this.closed) throw new Error(`the store ${this.location} is closed`);
    try {
      return step();
    } catch (error) {
      throw mapError(error, this.location);
    }
  }
}

interface PendingRead {
  clientId: string;
  digest: string | null;
  resolve: (answer: ClientAndToken) => void;
  reject: (error: unknown) => void;
}

function mapError(error: unknown, location: string): unknown {
  if (!(error instanceof Database.SqliteError)) return error;
  if (/^SQLITE_(BUSY|LOCKED)/.test(error.code)) {
    return new StoreUnavailableError(`the store ${location} is locked by another process (waited ${BUSY_TIMEOUT_MS} ms)`, { cause: error });
  }
  if (error.code === 'SQLITE_NOTADB') return new NotAStoreError(location, 'it is not an SQLite database');
  // Storage faults: nothing was written, and a retry may succeed once the operator acts.
  if (error.code === 'SQLITE_FULL') {
    return new StoreUnavailableError(`the store ${location} cannot grow: the disk (or SQLite's page limit) is full; free space, then retry`, { cause: error });
  }
  if (error.code.startsWith('SQLITE_READONLY')) {
    return new StoreUnavailableError(`the store ${location} is read-only here: check the file's and directory's permissions and the mount`, { cause: error });
  }
  if (error.code.startsWith('SQLITE_IOERR') || error.code.startsWith('SQLITE_CANTOPEN')) {
    return new StoreUnavailableError(`the store ${location} cannot be read or written (${error.code}): check the disk and the file`, { cause: error });
  }
  // After SQLITE_FULL or an I/O error inside a group commit's savepoint, SQLite rolls the whole
  // transaction back by itself; the commit then finds none. Nothing of the batch was written.
  if (error.code === 'SQLITE_ERROR' && /no transaction is active/.test(error.message)) {
    return new StoreUnavailableError(`the store ${location} rolled back a write (a full disk or an I/O error): check the disk, then retry`, { cause: error });
  }
  return error;
}

/**
 * Puts a connection in WAL mode. Two processes opening a new file at the same moment can
 * deadlock here: one, still seeing rollback-journal mode, waits for the exclusive lock the switch
 * needs while holding a PENDING lock, and that blocks the other's reads until the whole busy
 * timeout runs out ("locked by another process" on a file nobody else uses). So the switch waits
 * only briefly and retries, with jitter, letting the other go first; the busy timeout still
 * bounds the whole.
 */
function switchToWal(db: Database.Database, location: string): void {
  const deadline = Date.now() + BUSY_TIMEOUT_MS;
  db.pragma('busy_timeout = 20');
  try {
    for (;;) {
      try {
        const mode = db.pragma('journal_mode = WAL', { simple: true });
        if (mode !== 'wal') throw new Error(`cannot use ${location}: SQLite refused WAL journal mode (got ${String(mode)})`);
        return;
      } catch (error) {
        const busy = error instanceof Database.SqliteError && /^SQLITE_(BUSY|LOCKED)/.test(error.code);
        if (!busy || Date.now() > deadline) throw error;
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5 + Math.floor(Math.random() * 30));
      }
    }
  } finally {
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
  }
}

/** Creates an empty file, mode 0600, unless another process just did. */
/** Options of {@link SqliteStore.open}. */
export interface SqliteOpenOptions {
  /** Create the file (and the tables) if missing (default true); false: throw NoStoreError. */
  create?: boolean;
  /** The caller only reads: open a store this user may not write read-only instead of failing. */
  readOnly?: boolean;
  /** A long-running server: checkpoint the WAL on a thread of its own (checkpointer.ts). */
  backgroundCheckpoints?: boolean;
  /** Told of commit batches and row-cache hits (metrics). */
  observer?: StoreObserver;
}

/** Whether this process may write the store file and its directory (for the -wal and -shm files). */
function writable(location: string): boolean {
  return canWrite(location) && canWrite(path.dirname(location));
}

function canWrite(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Opens a store this user may not write. SQLite reads a WAL database through its -shm file, which
 * it cannot create in a directory the user may not write (SQLITE_READONLY_DIRECTORY). With no
 * -wal file (or an empty one) every commit is in the main file, and nobody is writing it: its
 * contents are then read once into memory, as a rollback-journal database, and served from there.
 */
function openReadOnly(location: string): Database.Database {
  const db = new Database(location, { readonly: true, fileMustExist: true, timeout: BUSY_TIMEOUT_MS });
  try {
    db.pragma('schema_version');
    return db;
  } catch (error) {
    db.close();
    if (!(error instanceof Database.SqliteError && error.code === 'SQLITE_READONLY_DIRECTORY')) throw error;
  }
  if ((fs.statSync(`${location}-wal`, { throwIfNoEntry: false })?.size ?? 0) > 0) {
    throw new StoreLocationError(
      `cannot read the store ${location}: its latest commits are in ${location}-wal, and SQLite needs to write ${location}-shm to read them, in a directory this user may not write; run the command as the store's owner`,
    );
  }
  const image = fs.readFileSync(location);
  if (image.length >= 20 && image[18] === 2) image.fill(1, 18, 20); // WAL format → rollback journal, in the copy only
  return new Database(image, { readonly: true });
}

function createPrivateFile(location: string): void {
  let fd: number;
  try {
    fd = fs.openSync(location, 'wx', 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return;
    throw error;
  }
  try {
    fs.fchmodSync(fd, 0o600); // the umask may have narrowed it further; the owner still needs rw
  } finally {
    fs.closeSync(fd);
  }
}

/** Narrows an empty file about to become a store to mode 0600; SQLite copies it to -wal and -shm. */
function makePrivate(location: string): void {
  if ((fs.statSync(location).mode & 0o077) !== 0) fs.chmodSync(location, 0o600);
}

/** Rejects anything but a regular file that is empty or starts with the SQLite header. */
function checkHeader(location: string): void {
  const stat = fs.statSync(location);
  if (!stat.isFile()) throw new NotAStoreError(location, 'it is not a regular file');
  if (stat.size === 0) return;
  const head = Buffer.alloc(SQLITE_HEADER.length);
  const fd = fs.openSync(location, 'r');
  try {
    fs.readSync(fd, head, 0, head.length, 0);
  } finally {
    fs.closeSync(fd);
  }
  if (!head.equals(SQLITE_HEADER)) throw new NotAStoreError(location, 'it is not an SQLite database');
}
