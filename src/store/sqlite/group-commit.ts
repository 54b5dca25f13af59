import type Database from 'better-sqlite3';
import type { StoreObserver } from '../store.js';
import { TurnBatch, type Queued } from '../turn-batch.js';

/**
 * A write step, and whether it is atomic by itself: at most one statement that writes, and
 * nothing after it that can fail (it then needs no savepoint of its own, two statements fewer).
 */
interface Step {
  run: () => unknown;
  atomic: boolean;
}

/** A queued write step. */
type Pending = Queued<Step, unknown>;

/**
 * What a transaction collects beside its steps and writes once, at its end (outbox-store.ts: the
 * revocations' security events, one outbox row per transaction). Called inside the transaction.
 */
export interface TransactionTail {
  /** Before each step: a mark to roll back to. */
  mark(): number;
  /** The step since `mark` failed and was rolled back: forget what it collected. */
  rollback(mark: number): void;
  /** After the last step, before COMMIT: writes what was collected, and forgets it (also when it throws). */
  end(): void;
}

/** A committed batch and how each of its steps ended, waiting to be settled. */
interface Committed {
  batch: Pending[];
  outcomes: { ok: boolean; value: unknown }[];
}

/**
 * Makes what is committed so far durable, off the event loop (wal-sync.ts), and calls `done`
 * once it is: with an error if it could not be.
 */
export type DeferredSync = (done: (error: unknown) => void) => void;

/**
 * How a batch waits for the write lock another process holds (a CLI bulk revocation, a purge):
 * off the event loop, trying again every few ms until `timeoutMs` from its first try, so that
 * reads and everything else go on meanwhile. The connection's own busy timeout is kept short
 * for that (open.ts): SQLite's busy handler sleeps on the calling thread.
 */
export interface LockWait {
  timeoutMs: number;
  /** Milliseconds until the next try; default 5 to 15, at random. */
  retryMs?: () => number;
}

const isBusy = (error: unknown): boolean => /^SQLITE_BUSY/.test(String((error as { code?: unknown } | null)?.code));

/**
 * Group commit: write steps queued during one turn of the event loop run in ONE immediate
 * transaction, so that N revocations arriving together cost one fsync, not N, without weakening
 * durability (`synchronous=FULL` still syncs that commit before any of them is acknowledged).
 * Each step runs in its own savepoint (or, when it writes with one statement, that statement's own
 * journal): a step that throws rolls back only itself and rejects only its own promise. A failed commit (another process held the lock past the busy timeout) rejects
 * every step of the batch: none of them was acknowledged, none of them happened.
 *
 * With a `deferredSync` (a server's connection runs with `synchronous=NORMAL`: the commit itself
 * does not wait for the disk), a batch is settled only once a sync that started after its commit
 * has completed: the event loop answers reads and prepares the next batch meanwhile, and the
 * batches committed during one sync share the next. At most one sync is in flight.
 */
export class GroupCommit {
  private readonly batch = new TurnBatch<Step, unknown>((steps) => this.commit(steps));
  /** Committed, waiting for the next sync. */
  private unsynced: Committed[] = [];
  /** Resolves when the sync in flight has completed and settled its steps; null: none in flight. */
  private syncing: Promise<void> | null = null;
  private readonly outer: Database.Transaction<(batch: Pending[]) => { ok: boolean; value: unknown }[]>;
  private readonly savepoint: Database.Transaction<(step: () => unknown) => unknown>;
  /** A batch waiting for another process's write lock, with the batches queued behind it (in order), and since when. */
  private waiting: { batch: Pending[]; since: number; tried: Promise<void> } | null = null;
  /** Whether the transaction under way has begun running steps (a busy error before that is BEGIN's). */
  private began = false;

  constructor(
    db: Database.Database,
    private readonly mapError: (error: unknown) => unknown,
    private readonly observer?: StoreObserver,
    private readonly deferredSync?: DeferredSync,
    private readonly tail?: TransactionTail,
    private readonly lockWait?: LockWait,
  ) {
    // Called inside `outer`, better-sqlite3 runs a transaction function as a SAVEPOINT.
    this.savepoint = db.transaction((step: () => unknown) => step());
    this.outer = db.transaction((batch: Pending[]) => {
      this.began = true;
      const outcomes = batch.map(({ query: step }) => {
        const mark = this.tail?.mark() ?? 0;
        try {
          // A statement that fails is undone by SQLite itself (its statement journal), so a step
          // whose only write is its last statement needs no savepoint to fail alone.
          return { ok: true, value: step.atomic ? step.run() : this.savepoint(step.run) };
        } catch (error) {
          this.tail?.rollback(mark);
          return { ok: false, value: error };
        }
      });
      // In the transaction: should it throw, the whole batch rolls back and fails (see commit).
      this.tail?.end();
      return outcomes;
    });
  }

  /**
   * Queues a synchronous write step; resolves with its result once the batch is committed.
   * `atomic`: the step writes with one statement at most, its last (see Step); it then runs
   * without a savepoint of its own.
   */
  run<T>(step: () => T, atomic = false): Promise<T> {
    return this.batch.add({ run: step, atomic }) as Promise<T>;
  }

  /** Commits what is queued now. Also called before the database closes (then see {@link synced}). */
  flush(): void {
    this.batch.flush();
  }

  private commit(batch: Pending[], since = Date.now()): void {
    // Behind a batch waiting for the lock: committed with it, in order, never before it.
    if (this.waiting !== null) {
      this.waiting.batch.push(...batch);
      return;
    }
    let outcomes: { ok: boolean; value: unknown }[];
    this.began = false;
    try {
      outcomes = this.outer.immediate(batch);
    } catch (error) {
      // BEGIN IMMEDIATE found the lock taken: no step ran, nothing to undo; try again shortly.
      if (this.lockWait && !this.began && isBusy(error) && Date.now() - since < this.lockWait.timeoutMs) {
        this.waitForLock(batch, since);
        return;
      }
      const mapped = this.mapError(error);
      for (const p of batch) p.reject(mapped);
      return;
    }
    this.observer?.commitBatch?.(batch.length);
    if (this.deferredSync === undefined) return this.settle({ batch, outcomes });
    this.unsynced.push({ batch, outcomes });
    if (this.syncing === null) this.syncing = this.syncUnsynced();
  }

  private waitForLock(batch: Pending[], since: number): void {
    const delay = this.lockWait!.retryMs?.() ?? 5 + Math.random() * 10;
    const tried = new Promise<void>((resolve) =>
      setTimeout(() => {
        const waiting = this.waiting!;
        this.waiting = null;
        this.commit(waiting.batch, waiting.since);
        resolve();
      }, delay),
    );
    this.waiting = { batch, since, tried };
  }

  /** Resolves once every step committed so far is settled (its sync completed), and none waits for the lock. */
  async synced(): Promise<void> {
    while (this.waiting !== null || this.syncing !== null) await (this.waiting?.tried ?? this.syncing);
  }

  /** Syncs, then settles, the batches committed before the sync started; repeats while more came. */
  private async syncUnsynced(): Promise<void> {
    while (this.unsynced.length > 0) {
      const covered = this.unsynced;
      this.unsynced = [];
      const error = await new Promise<unknown>((resolve) => this.deferredSync!(resolve));
      // On an error: committed, and visible to readers, but not known to be on disk, so not
      // acknowledged: every step of these batches fails as a storage fault (a revocation retried
      // is a no-op).
      for (const committed of covered) this.settle(committed, error ? this.mapError(error) : undefined);
    }
    this.syncing = null;
  }

  /** Resolves or rejects each step of a committed batch; with `failure`, rejects them all with it. */
  private settle({ batch, outcomes }: Committed, failure?: unknown): void {
    outcomes.forEach((o, i) => {
      if (failure !== undefined) batch[i]!.reject(failure);
      else if (o.ok) batch[i]!.resolve(o.value);
      else batch[i]!.reject(this.mapError(o.value));
    });
  }
}
