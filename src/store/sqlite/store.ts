import type { Trail } from '../trail.js';
import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import {
  DuplicateClientError,
  type AuditEntry,
  type AuditFilter,
  type BulkBatch,
  type BulkSelector,
  type ClientAndToken,
  type ClientRecord,
  type ClientSettings,
  type MintLimit,
  type MintOutcome,
  type RotateOutcome,
  type StoreStats,
  type TokenFilter,
  type TokenRecord,
  type TokenStore,
} from '../store.js';
import type { AuthorizationStore, EventStore } from '../store.js';
import { ForwardsAuthorizationStore } from '../forward-authorizations.js';
import { BackgroundCheckpointer } from './checkpointer.js';
import { BUSY_TIMEOUT_MS, insertUnique, mapError } from './errors.js';
import { SqliteEvents } from './outbox-store.js';
import { GroupCommit } from './group-commit.js';
import { Listing } from './listing.js';
import { openFile, WAL_AUTOCHECKPOINT_PAGES, WAL_HIGH_WATER_FACTOR, type SqliteOpenOptions } from './open.js';
import { ReadBatcher } from './read-batcher.js';
import { RowCache } from './row-cache.js';
import { WalSync } from './wal-sync.js';
import { clientFromRow, prepareStatements, selectorKind, settingsParams, tokenFromRow, type ClientRow } from './statements.js';
import { SqliteAuthorizations } from './authorizations.js';
import { SqliteDpopProofs } from './dpop-proofs.js';
import { prepareTransactions } from './transactions.js';
import { trailWrite, type TrailWrite } from './trail.js';

interface ClientAndTokenQuery {
  clientId: string;
  digest: string | null;
}

/**
 * The SQLite {@link TokenStore}: one file, shared safely by a running server and CLI commands.
 *
 * WAL lets readers proceed beside a writer; every acknowledged write is on disk, durable across
 * power loss (`synchronous=FULL`, or for a server a NORMAL commit synced before it is
 * acknowledged, wal-sync.ts); the busy timeout makes a second writer wait instead of
 * failing, and a wait past it surfaces as {@link StoreUnavailableError}. Every atomic operation
 * is one statement or one transaction, and every write runs inside a BEGIN IMMEDIATE group commit
 * (group-commit.ts; immediate, so that a transaction never has to upgrade a stale read snapshot
 * to a write and fail with SQLITE_BUSY_SNAPSHOT). The seams, each in its own file: opening and
 * pragmas (open.ts), read batching (read-batcher.ts), the rows kept between reads (row-cache.ts),
 * group commit (group-commit.ts, wal-sync.ts), WAL checkpoints (checkpointer.ts), the SQL
 * (statements.ts, transactions.ts, listing.ts). This class: the TokenStore methods over them.
 */
export class SqliteStore extends ForwardsAuthorizationStore implements TokenStore {
  private closed = false;
  private readonly st: ReturnType<typeof prepareStatements>;
  private readonly tx: ReturnType<typeof prepareTransactions>;
  private readonly listing: Listing;
  /** Security events (outbox-store.ts): receivers, the outbox the revocations write to, signing keys. */
  private readonly events: SqliteEvents;
  /** The authorization code flow's requests (authorizations.ts). */
  private readonly authorizations: SqliteAuthorizations;
  /** The DPoP proofs seen (dpop-proofs.ts). */
  private readonly dpopProofs: SqliteDpopProofs;
  /** The rows handed out without reading them again while nobody commits. */
  private readonly cache: RowCache;
  /** findClientAndToken calls of one event-loop turn, answered in one read transaction. */
  private readonly reads: ReadBatcher<ClientAndTokenQuery, ClientAndToken>;
  /** Every write goes through here: writes that arrive together share one commit. */
  private readonly writes: GroupCommit;
  /** With `backgroundCheckpoints`: the thread that checkpoints the WAL (checkpointer.ts). */
  private checkpointer: BackgroundCheckpointer | undefined;
  /** With `syncOffLoop`: syncs the WAL before a commit is acknowledged (wal-sync.ts). */
  private readonly walSync: WalSync | undefined;
  /** What a change writes beside itself, inside its write step (trail.ts): the one place it is written. */
  private readonly trail: TrailWrite;
  private readonly readClient = (id: string) => clientFromRow(this.st.getClient.get(id) as ClientRow | undefined);
  private readonly readToken = (digest: string) => tokenFromRow(this.st.byDigest.get(digest) as unknown[] | undefined);

  private constructor(
    private readonly db: Database.Database,
    readonly location: string,
    options: SqliteOpenOptions,
  ) {
    super();
    this.st = prepareStatements(db);
    this.tx = prepareTransactions(db, this.st);
    this.trail = trailWrite(this.st.insertAudit, (changed, event) => this.events.emitIf(changed, event));
    this.listing = new Listing(db);
    this.cache = new RowCache({ observer: options.observer });
    if (options.syncOffLoop) this.walSync = new WalSync(location); // the connection commits with NORMAL (open.ts)
    this.authorizations = new SqliteAuthorizations(db, {
      write: (step) => this.write(step),
      run: (step) => this.run(step),
      writeGrant: (tokens, audit) => {
        this.tx.insertMany(tokens);
        this.trail(true, { audit });
      },
    });
    // Remembering a proof changes no token: the kept token rows stay (write() would forget them).
    this.dpopProofs = new SqliteDpopProofs(db, { write: (step) => this.writeOther(step) });
    this.events = new SqliteEvents(db, (step) => this.write(step), (step) => this.run(step), (changed, trail) => this.trail(changed, trail));
    // The revocations' events of one transaction are written at its end, as one outbox row (outbox-store.ts tail).
    // A server waits for another process's write lock off the event loop (group-commit.ts LockWait).
    const lockWait = options.syncOffLoop ? { timeoutMs: BUSY_TIMEOUT_MS } : undefined;
    this.writes = new GroupCommit(db, (error) => mapError(error, location), options.observer, this.walSync?.sync, this.events.tail, lockWait);
    const readAll = db.transaction((batch: ClientAndTokenQuery[]) => {
      this.cache.sync(this.st.dataVersion.get() as number); // the first read: the snapshot starts here
      return batch.map(({ clientId, digest }) => ({
        client: this.cache.client(clientId, this.readClient),
        token: digest === null ? null : this.cache.token(digest, this.readToken),
      }));
    });
    this.reads = new ReadBatcher((batch) => readAll.deferred(batch), (error) => mapError(error, location));
  }

  /**
   * Opens (and with `create`, the default, creates) the store at `file` (open.ts). With
   * `backgroundCheckpoints`, a long-running server's: WAL checkpoints on a thread of their own.
   */
  static async open(file: string, options: SqliteOpenOptions = {}): Promise<SqliteStore> {
    const { db, location, readonly } = openFile(file, options);
    const store = new SqliteStore(db, location, readonly ? { ...options, syncOffLoop: false } : options);
    if (options.backgroundCheckpoints && !readonly) store.checkpointInBackground(options.checkpointPages);
    return store;
  }

  async schemaVersion(): Promise<number> {
    return this.run(() => this.db.pragma('user_version', { simple: true }) as number);
  }

  async createClient(client: ClientRecord, trail: Trail): Promise<void> {
    await this.write(() => {
      this.cache.forgetClients();
      insertUnique(() => this.st.insertClient.run({ ...client, ...settingsParams(client) }), () => new DuplicateClientError(client.id));
      this.trail(true, trail);
    });
  }

  /**
   * Every request authenticates its client, so client rows are kept between reads while nobody
   * commits (row-cache.ts): a kept row is exactly what a read would return now.
   */
  async getClient(id: string): Promise<ClientRecord | null> {
    return this.run(() => {
      this.cache.sync(this.st.dataVersion.get() as number);
      return this.cache.client(id, this.readClient);
    });
  }

  /**
   * The request path of all three endpoints, batched (read-batcher.ts): the calls made during one
   * turn of the event loop are answered together in ONE read transaction, whose first read,
   * `PRAGMA data_version`, tells the row cache (row-cache.ts) whether anybody has committed since
   * the rows it keeps were read. Each answer reflects every commit made before its request arrived.
   */
  findClientAndToken(clientId: string, digest: string | null): Promise<ClientAndToken> {
    if (this.closed) return Promise.reject(new Error(`the store ${this.location} is closed`));
    return this.reads.read({ clientId, digest });
  }

  async listClients(): Promise<ClientRecord[]> {
    return this.run(() => (this.st.listClients.all() as ClientRow[]).map((row) => clientFromRow(row)!));
  }

  async deleteClient(id: string, trail: Trail): Promise<boolean> {
    return this.write(() => {
      this.cache.forgetClients();
      return this.trail(this.st.deleteClient.run(id).changes === 1, trail);
    });
  }

  async updateClientSecret(id: string, secretHash: string, at: number, trail: Trail): Promise<boolean> {
    return this.write(() => {
      this.cache.forgetClients();
      return this.trail(this.st.updateSecret.run(secretHash, at, id).changes === 1, trail);
    });
  }

  async updateClientSettings(id: string, settings: ClientSettings, trail: Trail): Promise<boolean> {
    return this.write(() => {
      this.cache.forgetClients();
      return this.trail(this.st.updateSettings.run({ id, ...settingsParams(settings) }).changes === 1, trail);
    });
  }

  async insertTokens(tokens: TokenRecord[]): Promise<void> {
    await this.write(() => this.tx.insertMany(tokens));
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
    return this.run(() => this.listing.list(filter));
  }

  async countTokens(filter: TokenFilter): Promise<number> {
    return this.run(() => this.listing.count(filter));
  }

  async countRevocable(selector: BulkSelector, now: number): Promise<number> {
    return this.run(() => (this.st.bulk[selectorKind(selector)].count.get({ ...selector, at: now }) as { n: number }).n);
  }

  /** The event, when there is one to write, commits with the revocation, in its transaction's outbox row (trail.ts). */
  async revokeToken(jti: string, at: number, cascadeGrant: boolean, trail: Trail): Promise<boolean> {
    return this.write(() => this.trail(this.tx.revoke(jti, at, cascadeGrant), trail));
  }

  async insertMintedAccess(access: TokenRecord, refreshJti: string, limit?: MintLimit): Promise<MintOutcome> {
    // One read, then the insert as the only write: atomic without a savepoint (group-commit.ts).
    return this.write(() => this.tx.mint(access, refreshJti, limit), true);
  }

  /**
   * Writers take turns on the file (every write is BEGIN IMMEDIATE), so a mint that commits after
   * this finds its refresh token revoked, and one that committed before is revoked here.
   */
  async revokeGrant(grantId: string, at: number, trail: Trail): Promise<number> {
    return this.write(() => this.trail(this.st.revokeGrant.run(at, grantId).changes, trail));
  }

  /** The batch's event with the batch, when it revoked a token (ports/token-writes.ts). */
  async revokeBulk(selector: BulkSelector, at: number, limit: number, resume: string | undefined, trail: Trail): Promise<BulkBatch> {
    const started = performance.now();
    const done = await this.write(() => {
      const batch = this.tx.revokeBulk(selector, at, limit, resume);
      this.trail(batch.revoked, trail);
      return batch;
    });
    if (done.more) await letOtherWritersIn(started);
    return done;
  }

  async rotateRefreshToken(oldJti: string, issued: TokenRecord[], at: number, revokeJti?: string): Promise<RotateOutcome> {
    return this.write(() => this.tx.rotate(oldJti, issued, at, revokeJti));
  }

  async purgeBatch(before: number, batchSize: number, trail: Trail): Promise<number> {
    const started = performance.now();
    const purged = await this.write(() => this.trail(this.st.purge.run({ before, limit: batchSize }).changes, trail));
    if (purged === batchSize) await letOtherWritersIn(started);
    return purged;
  }

  async rememberDpopProof(key: string, until: number, now: number): Promise<boolean> {
    return this.dpopProofs.rememberDpopProof(key, until, now);
  }

  async purgeDpopProofs(before: number, batchSize: number): Promise<number> {
    return this.dpopProofs.purgeDpopProofs(before, batchSize);
  }

  async countPurgeable(before: number): Promise<number> {
    return this.run(() => (this.st.countPurgeable.get({ before }) as { n: number }).n);
  }

  async purgeGrantsBatch(): Promise<{ deleted: number; next: string | null }> {
    return { deleted: 0, next: null }; // no grant records: a grant is the id its tokens share
  }

  async purgeAuditBatch(before: number, batchSize: number, trail: Trail): Promise<number> {
    return this.write(() => this.trail(this.st.purgeAudit.run({ before, limit: batchSize }).changes, trail));
  }

  async countAuditBefore(before: number): Promise<number> {
    return this.run(() => (this.st.countAuditBefore.get({ before }) as { n: number }).n);
  }

  async stats(now: number, clientId?: string): Promise<StoreStats> {
    return this.run(() => this.tx.stats.deferred(now, clientId));
  }

  async appendAudit(entry: AuditEntry): Promise<void> {
    await this.write(() => this.st.insertAudit.run(entry));
  }

  async listAudit(filter: AuditFilter): Promise<AuditEntry[]> {
    const { beforeId = null, limit = -1 } = filter;
    return this.run(() => this.st.listAudit.all({ ...auditParams(filter), beforeId, limit }) as AuditEntry[]);
  }

  async countAudit(filter: Omit<AuditFilter, 'beforeId' | 'limit'>): Promise<number> {
    return this.run(() => (this.st.countAudit.get(auditParams(filter)) as { n: number }).n);
  }

  async ping(): Promise<void> {
    this.run(() => this.st.ping.get());
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true; // nothing new from here on
    this.writes.flush(); // acknowledge nothing that is not committed…
    this.reads.flush();
    await this.writes.synced(); // …and synced
    await this.checkpointer?.stop();
    this.walSync?.close();
    this.db.close(); // the last connection to close checkpoints what is left
  }

  /**
   * Leaves WAL checkpoints to a thread of their own (checkpointer.ts) instead of a commit on the
   * event loop. Should the thread fail, SQLite checkpoints automatically again.
   *
   * The commits still checkpoint themselves past {@link WAL_HIGH_WATER_FACTOR} times the thread's
   * pages: under writes that never pause, the thread copies the WAL but can never catch its
   * end, since the writer appends while it copies, and the WAL starts again from its beginning
   * only once all of it was copied when a write begins; without this bound it grew by ~100 MB a
   * second under the bench's refresh load (3 GB in 30 s). A commit that checkpoints copies what the
   * thread has not yet (little, as a rule), with no writer beside it, so the next write restarts the
   * WAL.
   */
  private checkpointInBackground(pages = WAL_AUTOCHECKPOINT_PAGES): void {
    this.db.pragma(`wal_autocheckpoint = ${WAL_HIGH_WATER_FACTOR * pages}`);
    this.checkpointer = new BackgroundCheckpointer(
      this.location,
      () => {
        if (!this.closed) this.db.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
      },
      { frames: pages },
    );
  }

  /**
   * Queues one synchronous write step for the next group commit (see GroupCommit). The kept token
   * rows are forgotten as the step runs: this connection's own commits do not move data_version.
   * Nothing reads between the step and its commit (both run in one synchronous flush).
   * `atomic`: the step's only write is its last statement (GroupCommit.run).
   */
  private write<T>(step: () => T, atomic = false): Promise<T> {
    if (this.closed) return Promise.reject(new Error(`the store ${this.location} is closed`));
    return this.writes.run(() => {
      this.cache.forgetTokens();
      return step();
    }, atomic);
  }

  /** A write step that changes no token or client row: the kept rows stay valid. */
  private writeOther<T>(step: () => T): Promise<T> {
    if (this.closed) return Promise.reject(new Error(`the store ${this.location} is closed`));
    return this.writes.run(step);
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

  // ---- security events (outbox-store.ts): the methods forward to this (forward-events.ts) ----

  protected _eventStore(): EventStore {
    return this.events;
  }

  /** The authorization code flow's requests (authorizations.ts): the methods forward to this (forward-authorizations.ts). */
  protected _authorizationStore(): AuthorizationStore {
    return this.authorizations;
  }
}

/** An audit filter's named parameters (statements.ts AUDIT_CONDITIONS). */
function auditParams(filter: AuditFilter): Record<string, string | number | null> {
  const { since = null, jti = null, clientId = null, hideActions } = filter;
  return { since, jti, clientId, hide: hideActions === undefined || hideActions.length === 0 ? null : JSON.stringify(hideActions) };
}

/**
 * Between two batches of a bulk write (a revocation, a purge): as long as the batch took, 10 to
 * 50 ms, without the write lock, so that a server's writes, which try again every few ms while
 * another process holds it (group-commit.ts), get in between instead of waiting out the whole run.
 */
function letOtherWritersIn(batchStarted: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.min(50, Math.max(10, performance.now() - batchStarted))));
}
