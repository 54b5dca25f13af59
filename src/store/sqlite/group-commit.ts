import type Database from 'better-sqlite3';

interface Pending {
  step: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit: write steps queued during one turn of the event loop run in ONE immediate
 * transaction, so that N revocations arriving together cost one fsync, not N, without weakening
 * durability (`synchronous=FULL` still syncs that commit before any of them is acknowledged).
 * Each step runs in its own savepoint: a step that throws rolls back only itself and rejects only
 * its own promise. A failed commit (another process held the lock past the busy timeout) rejects
 * every step of the batch: none of them was acknowledged, none of them happened.
 */
export class GroupCommit {
  private queue: Pending[] = [];
  private scheduled = false;
  private readonly outer: Database.Transaction<(batch: Pending[]) => { ok: boolean; value: unknown }[]>;
  private readonly savepoint: Database.Transaction<(step: () => unknown) => unknown>;

  constructor(
    db: Database.Database,
    private readonly mapError: (error: unknown) => unknown,
  ) {
    // Called inside `outer`, better-sqlite3 runs a transaction function as a SAVEPOINT.
    this.savepoint = db.transaction((step: () => unknown) => step());
    this.outer = db.transaction((batch: Pending[]) =>
      batch.map(({ step }) => {
        try {
          return { ok: true, value: this.savepoint(step) };
        } catch (error) {
          return { ok: false, value: error };
        }
      }),
    );
  }

  /** Queues a synchronous write step; resolves with its result once the batch is committed. */
  run<T>(step: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ step, resolve: resolve as (value: unknown) => void, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** Commits what is queued now. Also called before the database closes. */
  flush(): void {
    const batch = this.queue;
    this.queue = [];
    this.scheduled = false;
    if (batch.length === 0) return;
    let outcomes: { ok: boolean; value: unknown }[];
    try {
      outcomes = this.outer.immediate(batch);
    } catch (error) {
      const mapped = this.mapError(error);
      for (const p of batch) p.reject(mapped);
      return;
    }
    outcomes.forEach((o, i) => (o.ok ? batch[i]!.resolve(o.value) : batch[i]!.reject(this.mapError(o.value))));
  }
}
