import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import type { ClientAndToken } from '../store.js';
import type { AuthorizationStore, EventStore } from '../store.js';
import { ForwardsAuthorizationStore } from '../forward-authorizations.js';
import { BackgroundCheckpointer } from './checkpointer.js';
import { BUSY_TIMEOUT_MS, mapError } from './errors.js';
import { SqliteEvents } from './outbox-store.js';
import { GroupCommit } from './group-commit.js';
import { Listing } from './listing.js';
import type { SqliteOpenOptions } from './open.js';
import { ReadBatcher } from './read-batcher.js';
import { RowCache } from './row-cache.js';
import { WalSync } from './wal-sync.js';
import { clientFromRow, prepareStatements, tokenFromRow, type ClientRow } from './statements.js';
import { SqliteAuthorizations } from './authorizations.js';
import { SqliteDpopProofs } from './dpop-proofs.js';
import { prepareTransactions } from './transactions.js';
import { trailWrite, type TrailWrite } from './trail.js';

interface ClientAndTokenQuery {
  clientId: string;
  digest: string | null;
}

/** The SQLite store's state and the steps its methods share: the design is told in store.ts. */
export abstract class SqliteStoreCore extends ForwardsAuthorizationStore {
  protected closed = false;
  protected readonly st: ReturnType<typeof prepareStatements>;
  protected readonly tx: ReturnType<typeof prepareTransactions>;
  protected readonly listing: Listing;
  /** Security events (outbox-store.ts): receivers, the outbox the revocations write to, signing keys. */
  protected readonly events: SqliteEvents;
  /** The authorization code flow's requests (authorizations.ts). */
  protected readonly authorizations: SqliteAuthorizations;
  /** The DPoP proofs seen (dpop-proofs.ts). */
  protected readonly dpopProofs: SqliteDpopProofs;
  /** The rows handed out without reading them again while nobody commits. */
  protected readonly cache: RowCache;
  /** findClientAndToken calls of one event-loop turn, answered in one read transaction. */
  protected readonly reads: ReadBatcher<ClientAndTokenQuery, ClientAndToken>;
  /** Every write goes through here: writes that arrive together share one commit. */
  protected readonly writes: GroupCommit;
  /** With `backgroundCheckpoints`: the thread that checkpoints the WAL (checkpointer.ts). */
  protected checkpointer: BackgroundCheckpointer | undefined;
  /** With `syncOffLoop`: syncs the WAL before a commit is acknowledged (wal-sync.ts). */
  protected readonly walSync: WalSync | undefined;
  /** What a change writes beside itself, inside its write step (trail.ts): the one place it is written. */
  protected readonly trail: TrailWrite;
  protected readonly readClient = (id: string) => clientFromRow(this.st.getClient.get(id) as ClientRow | undefined);
  protected readonly readToken = (digest: string) => tokenFromRow(this.st.byDigest.get(digest) as unknown[] | undefined);

  protected constructor(
    protected readonly db: Database.Database,
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
   * Queues one synchronous write step for the next group commit (see GroupCommit). The kept token
   * rows are forgotten as the step runs: this connection's own commits do not move data_version.
   * Nothing reads between the step and its commit (both run in one synchronous flush).
   * `atomic`: the step's only write is its last statement (GroupCommit.run).
   */
  protected write<T>(step: () => T, atomic = false): Promise<T> {
    if (this.closed) return Promise.reject(new Error(`the store ${this.location} is closed`));
    return this.writes.run(() => {
      this.cache.forgetTokens();
      return step();
    }, atomic);
  }

  /** A write step that changes no token or client row: the kept rows stay valid. */
  protected writeOther<T>(step: () => T): Promise<T> {
    if (this.closed) return Promise.reject(new Error(`the store ${this.location} is closed`));
    return this.writes.run(step);
  }

  /** Runs one synchronous database step, with the store's errors in place of SQLite's. */
  protected run<T>(step: () => T): T {
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

/**
 * Between two batches of a bulk write (a revocation, a purge): as long as the batch took, 10 to
 * 50 ms, without the write lock, so that a server's writes, which try again every few ms while
 * another process holds it (group-commit.ts), get in between instead of waiting out the whole run.
 */
export function letOtherWritersIn(batchStarted: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.min(50, Math.max(10, performance.now() - batchStarted))));
}
