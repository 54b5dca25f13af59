import { PushDeliverer, type DelivererOptions } from '../../src/events/deliverer.js';
import { SigningKeys } from '../../src/events/keys.js';
import type { MemoryStore } from '../../src/store/memory/index.js';
import type { ManualTimers } from '../helpers/timers.js';

/** The issuer every deliverer of these tests signs for. */
export const TEST_ISSUER = 'https://issuer.example.test';

/**
 * A deliverer on `store` whose clock and timers are `timers` (nothing waits in real time), signing
 * with keys kept in the same store unless `options.keys` says otherwise; the rest of `options`
 * (push, log, settings) is what each test varies.
 */
export function manualDeliverer(store: MemoryStore, timers: ManualTimers, options: Partial<Omit<DelivererOptions, 'store' | 'clock' | 'timers'>> = {}): PushDeliverer {
  const clock = timers.clock;
  return new PushDeliverer({ store, keys: new SigningKeys(store, () => clock.now()), issuer: () => TEST_ISSUER, clock, timers, ...options });
}
