import type { TokenStore } from '../store.js';
import { BackgroundCheckpointer } from './checkpointer.js';
import { openFile, WAL_AUTOCHECKPOINT_PAGES, WAL_HIGH_WATER_FACTOR, type SqliteOpenOptions } from './open.js';
import { SqliteAuditStore } from './audit.js';

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
 * (statements.ts, transactions.ts, listing.ts). The TokenStore methods over them, one file per
 * port as in every store folder (clients.ts, token-reads.ts, token-writes.ts, maintenance.ts,
 * audit.ts), on the state of store-core.ts; this class opens and closes the store.
 */
export class SqliteStore extends SqliteAuditStore implements TokenStore {
  /**
   * Opens (and with `create`, the default, creates) the store at `file` (open.ts). With
   * `backgroundCheckpoints`, a long-running server's: WAL checkpoints on a thread of their own.
   */
  static async open(file: string, options: SqliteOpenOptions = {}): Promise<SqliteStore> {
    const { db, location, readonly } = openFile(file, options);
    const store = new SqliteStore(db, location, readonly ? { ...options, syncOffLoop: false } : options);
    if (options.backgroundCheckpoints && !readonly) store.checkpointInBackground(options.checkpointPages, options.checkpointMaxIntervalMs);
    return store;
  }

  async schemaVersion(): Promise<number> {
    return this.run(() => this.db.pragma('user_version', { simple: true }) as number);
  }

  async rememberDpopProof(key: string, until: number, now: number): Promise<boolean> {
    return this.dpopProofs.rememberDpopProof(key, until, now);
  }

  async purgeDpopProofs(before: number, batchSize: number): Promise<number> {
    return this.dpopProofs.purgeDpopProofs(before, batchSize);
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
  private checkpointInBackground(pages = WAL_AUTOCHECKPOINT_PAGES, maxIntervalMs?: number): void {
    this.db.pragma(`wal_autocheckpoint = ${WAL_HIGH_WATER_FACTOR * pages}`);
    this.checkpointer = new BackgroundCheckpointer(
      this.location,
      () => {
        if (!this.closed) this.db.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
      },
      { frames: pages, maxIntervalMs },
    );
  }
}
