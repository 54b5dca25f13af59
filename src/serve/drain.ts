import type { Timers } from '../events/deliverer.js';

/** `serve --drain`'s default (contract 6): longer than a load balancer's usual 1–2 s probe interval, times two probes. */
export const DEFAULT_DRAIN_MS = 5_000;

const NODE_TIMERS: Timers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/**
 * The drain of contract 6: `markNotReady` at once (readiness answers 503, so load balancers and
 * Kubernetes take the node out of rotation), then requests are still served for `drainMs`, so
 * that those a balancer sends before it has seen the 503 are answered rather than refused.
 * Resolves when the time is up, or at once when `skip` resolves (a second signal: the
 * operator does not want to wait). The caller then stops accepting and finishes what is in flight.
 */
export async function drain(markNotReady: () => void, drainMs: number, skip: Promise<unknown>, timers: Timers = NODE_TIMERS): Promise<void> {
  markNotReady();
  if (drainMs <= 0) return;
  let handle: unknown;
  const over = new Promise<void>((resolve) => (handle = timers.setTimeout(resolve, drainMs)));
  try {
    await Promise.race([over, skip]);
  } finally {
    timers.clearTimeout(handle);
  }
}
