/** One queued call: what was asked, and how to answer it. */
export interface Queued<Q, A> {
  query: Q;
  resolve: (answer: A) => void;
  reject: (error: unknown) => void;
}

/**
 * Collects the calls made during one turn of the event loop and hands them to `handle` together,
 * in the check phase that follows (setImmediate), whatever is queued: on SQLite the read batcher
 * answers them in one read transaction and the group commit in one write transaction; on
 * PostgreSQL (postgres/batching.ts) a batch is one statement, so one round trip and one commit.
 * `handle` answers every call it is given, now or later.
 */
export class TurnBatch<Q, A> {
  private queue: Queued<Q, A>[] = [];
  private scheduled = false;

  constructor(private readonly handle: (batch: Queued<Q, A>[]) => void) {}

  /** Queues a call for this turn's batch. */
  add(query: Q): Promise<A> {
    return new Promise<A>((resolve, reject) => {
      this.queue.push({ query, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** Hands over what is queued now. Also called before the database closes. */
  flush(): void {
    const batch = this.queue;
    this.queue = [];
    this.scheduled = false;
    if (batch.length > 0) this.handle(batch);
  }
}
