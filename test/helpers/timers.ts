import { ManualClock } from '../../src/engine/clock.js';
import type { Timers } from '../../src/events/deliverer.js';

interface Pending {
  due: number;
  seq: number;
  fn: () => unknown;
}

/**
 * Timers that fire only when their clock is advanced, in order of when they are due, each
 * awaited (a deliverer's round is the promise its timer returns) before the next is looked at,
 * so a minute of retries and backoff passes in as long as the rounds take to run.
 */
export class ManualTimers implements Timers {
  private pending: Pending[] = [];
  private seq = 0;

  constructor(readonly clock: ManualClock = new ManualClock()) {}

  setTimeout(fn: () => unknown, ms: number): unknown {
    const timer: Pending = { due: this.clock.now() + Math.max(0, ms), seq: this.seq++, fn };
    this.pending.push(timer);
    return timer;
  }

  clearTimeout(handle: unknown): void {
    this.pending = this.pending.filter((t) => t !== handle);
  }

  /** Timers not yet fired. */
  get size(): number {
    return this.pending.length;
  }

  /** Moves the clock on by `ms`, firing every timer due on the way (those they set too) at its due time. */
  async advance(ms: number): Promise<void> {
    const until = this.clock.now() + ms;
    for (;;) {
      const next = this.pending.filter((t) => t.due <= until).sort((a, b) => a.due - b.due || a.seq - b.seq)[0];
      if (next === undefined) break;
      this.pending = this.pending.filter((t) => t !== next);
      if (next.due > this.clock.now()) this.clock.set(next.due);
      await next.fn();
    }
    this.clock.set(until);
  }
}
