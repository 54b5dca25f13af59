import { ServiceUnavailableError } from './errors.js';

/**
 * Runs at most `concurrency` tasks at once, taking queued tasks round-robin by key, so that one
 * key flooding the queue (a client sent wrong passwords in a loop) cannot starve the others.
 * A key may queue at most `maxQueuedPerKey` tasks and all keys `maxQueued`; past that, the task is
 * refused at once with {@link ServiceUnavailableError} rather than left to wait.
 */
export class FairLimiter {
  private running = 0;
  private queued = 0;
  /** Map order is the round-robin order: a key served is moved to the back. */
  private readonly queues = new Map<string, (() => void)[]>();

  constructor(
    private readonly concurrency: number,
    private readonly maxQueuedPerKey: number,
    private readonly maxQueued: number,
  ) {}

  async run<T>(key: string, task: () => Promise<T>): Promise<T> {
    if (this.running >= this.concurrency) {
      const queue = this.queues.get(key) ?? [];
      if (queue.length >= this.maxQueuedPerKey || this.queued >= this.maxQueued) {
        throw new ServiceUnavailableError('Too many client authentications are waiting; try again shortly');
      }
      await new Promise<void>((resolve) => {
        queue.push(resolve);
        this.queues.set(key, queue);
        this.queued++;
      });
    } else {
      this.running++;
    }
    try {
      return await task();
    } finally {
      this.next();
    }
  }

  /** Hands this task's slot to the next key in turn, or frees it. */
  private next(): void {
    const first = this.queues.entries().next();
    if (first.done) {
      this.running--;
      return;
    }
    const [key, queue] = first.value;
    const resolve = queue.shift()!;
    this.queues.delete(key);
    if (queue.length > 0) this.queues.set(key, queue);
    this.queued--;
    resolve();
  }
}
