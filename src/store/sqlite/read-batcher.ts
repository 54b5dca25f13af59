import { TurnBatch, type Queued } from '../turn-batch.js';

/**
 * Read batching: the reads asked for during one turn of the event loop are answered together, in
 * the check phase that follows, by one call of `readAll` (the store runs it as ONE read
 * transaction). Every request of the batch was read from its socket before that transaction
 * starts, so each answer still reflects every commit made before its request arrived, as a read
 * per request would; one transaction for the batch saves the file-lock system calls of one per
 * request. A failure of `readAll` rejects every read of its batch.
 */
export class ReadBatcher<Q, A> {
  private readonly batch: TurnBatch<Q, A>;

  constructor(
    private readonly readAll: (queries: Q[]) => A[],
    private readonly mapError: (error: unknown) => unknown,
  ) {
    this.batch = new TurnBatch((reads) => this.answer(reads));
  }

  /** Queues a read for the next batch. */
  read(query: Q): Promise<A> {
    return this.batch.add(query);
  }

  /** Answers what is queued now. Also called before the database closes. */
  flush(): void {
    this.batch.flush();
  }

  private answer(reads: Queued<Q, A>[]): void {
    let answers: A[];
    try {
      answers = this.readAll(reads.map((r) => r.query));
    } catch (error) {
      const mapped = this.mapError(error);
      for (const r of reads) r.reject(mapped);
      return;
    }
    answers.forEach((answer, i) => reads[i]!.resolve(answer));
  }
}
