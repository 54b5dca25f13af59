/**
 * Read batching: the reads asked for during one turn of the event loop are answered together, in
 * the check phase that follows (setImmediate), by one call of `readAll` (the store runs it as ONE
 * read transaction). Every request of the batch was read from its socket before that transaction
 * starts, so each answer still reflects every commit made before its request arrived, as a read
 * per request would; one transaction for the batch saves the file-lock system calls of one per
 * request. A failure of `readAll` rejects every read of its batch.
 */
export class ReadBatcher<Q, A> {
  private queue: { query: Q; resolve: (answer: A) => void; reject: (error: unknown) => void }[] = [];
  private scheduled = false;

  constructor(
    private readonly readAll: (queries: Q[]) => A[],
    private readonly mapError: (error: unknown) => unknown,
  ) {}

  /** Queues a read for the next batch. */
  read(query: Q): Promise<A> {
    return new Promise<A>((resolve, reject) => {
      this.queue.push({ query, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** Answers what is queued now. Also called before the database closes. */
  flush(): void {
    const batch = this.queue;
    this.queue = [];
    this.scheduled = false;
    if (batch.length === 0) return;
    let answers: A[];
    try {
      answers = this.readAll(batch.map((r) => r.query));
    } catch (error) {
      const mapped = this.mapError(error);
      for (const r of batch) r.reject(mapped);
      return;
    }
    answers.forEach((answer, i) => batch[i]!.resolve(answer));
  }
}
