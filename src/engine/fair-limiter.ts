import { ServiceUnavailableError } from './errors.js';

/**
 * Runs at most `concurrency` tasks at once, taking queued tasks round-robin by key, so that one
 * key flooding the queue (a client sent wrong passwords in a loop) cannot starve the others.
 * A key may queue at most `maxQueuedPerKey` tasks and all keys `maxQueued`; past that, the task is
 * refused at once with {@link ServiceUnavailableError} rather than left to wait.
 *
 * A task run with `priority` waits in a lane of its own, served before every key's: the
 * authenticator puts there the first password a source presents for a client under a flood of
 * wrong ones, so that the owner's correct password is checked after at most the hashes already
 * running. That lane is bounded by `maxQueuedPerKey` too.
 */
export class FairLimiter {
  private running = 0;
  private queued = 0;
  /** Map order is the round-robin order: a key served is moved to the back. */
  private readonly queues = new Map<string, (() => void)[]>();
  private readonly priorityQueue: (() => void)[] = [];

  constructor(
    private readonly concurrency: number,
    private readonly maxQueuedPerKey: number,
    private readonly maxQueued: number,
  ) {}

  async run<T>(key: string, task: () => Promise<T>, priority = false): Promise<T> {
    if (this.running >= this.concurrency) {
      const queue = priority ? this.priorityQueue : (this.queues.get(key) ?? []);
      if (queue.length >= this.maxQueuedPerKey || this.queued >= this.maxQueued) {
        throw new ServiceUnavailableError('Too many client authentications are waiting; try again shortly');
      }
      await new Promise<void>((resolve) => {
        queue.push(resolve);
        if (!priority) this.queues.set(key, queue);
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

  /** Hands this task's slot to the next priority task, else the next key in turn, or frees it. */
  private next(): void {
    const urgent = this.priorityQueue.shift();
    if (urgent !== undefined) {
      this.queued--;
      urgent();
      return;
    }
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
