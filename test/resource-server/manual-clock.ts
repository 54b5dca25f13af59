import type { ResourceServerClock } from '../../src/resource-server/index.js';

/**
 * A clock for the module whose time moves only when the test moves it: the cache's ages, the
 * fallback and the poller's waits (its back-off, its pause after a refused SET) without real
 * waits. Sockets and the fake transmitter stay on real time.
 */
export class ManualTimers implements ResourceServerClock {
  private t: number;
  private readonly sleepers = new Set<{ at: number; wake: () => void }>();

  constructor(start = Date.now()) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  sleep(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal.aborted) return resolve();
      const sleeper = {
        at: this.t + ms,
        wake: () => {
          this.sleepers.delete(sleeper);
          signal.removeEventListener('abort', sleeper.wake);
          resolve();
        },
      };
      this.sleepers.add(sleeper);
      signal.addEventListener('abort', sleeper.wake, { once: true });
    });
  }

  /** How many sleeps are under way (the poller waiting out its back-off, say). */
  get sleeping(): number {
    return this.sleepers.size;
  }

  /** Moves time on by `ms`, waking every sleep that ends by then. */
  advance(ms: number): void {
    this.t += ms;
    for (const s of [...this.sleepers]) if (s.at <= this.t) s.wake();
  }

  /**
   * Waits in real time (up to `timeoutMs`) for `condition`, moving time on to the end of each
   * sleep as soon as one is under way: the module's waits take no time, and none is skipped.
   */
  async runUntil(condition: () => boolean, timeoutMs = 3000): Promise<void> {
    const start = Date.now();
    while (!condition()) {
      if (Date.now() - start > timeoutMs) throw new Error('timed out');
      const next = Math.min(...[...this.sleepers].map((s) => s.at));
      if (Number.isFinite(next)) this.advance(Math.max(0, next - this.t));
      await new Promise((r) => setTimeout(r, 5));
    }
  }
}
