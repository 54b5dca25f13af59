import type { FastifyBaseLogger } from 'fastify';
import type { Engine } from '../engine/engine.js';
import { PushDeliverer } from '../events/deliverer.js';
import { SigningKeys } from '../events/keys.js';

/** Security events in a serving process: its signing key made sure of, and its push deliverer. */
export interface EventDelivery {
  /** Stops the deliverer: pushes in flight are settled, leases released. */
  stop(): Promise<void>;
}

/**
 * Starts the push deliverer of this process (issue 18). Every serving process runs one, workers
 * too: the store's leases decide which process sends to which receiver. Makes sure there is a
 * current signing key first (of several nodes starting at once, one key wins).
 */
export async function startEventDelivery(engine: Engine, log: FastifyBaseLogger): Promise<EventDelivery> {
  const keys = new SigningKeys(engine.store);
  await keys.ensureCurrent();
  const deliverer = new PushDeliverer({
    store: engine.store,
    keys,
    issuer: () => engine.config.issuer,
    owner: `${engine.config.node}:${process.pid}:${Math.random().toString(36).slice(2, 8)}`,
    log: (level, fields, message) => log[level](fields, message),
  });
  deliverer.start();
  return { stop: () => deliverer.stop() };
}
