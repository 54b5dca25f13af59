/**
 * The time and the timers the module reads: the system's by default ({@link SYSTEM_CLOCK}). The
 * cache's ages, the fallback, the JWKS refetch interval and the poller's waits all go through it,
 * so that a test moves time on instead of waiting for it.
 */
export interface ResourceServerClock {
  /** Milliseconds since the epoch, as `Date.now()`. */
  now(): number;
  /** Resolves after `ms`, or as soon as `signal` aborts. */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
}

export const SYSTEM_CLOCK: ResourceServerClock = Object.freeze({
  now: () => Date.now(),
  sleep(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      if (signal.aborted) return resolve();
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      }
      signal.addEventListener('abort', done, { once: true });
    });
  },
});
