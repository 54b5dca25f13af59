import type { FastifyBaseLogger } from 'fastify';
import type { Engine } from '../engine/engine.js';
import { PushDeliverer } from '../events/deliverer.js';
import { KEY_ROTATION_REFUSED, KeyRotationError, SigningKeys } from '../events/keys.js';
import type { TokenctlMetrics } from '../metrics/metrics.js';

/** Security events in a serving process: its signing key made sure of, and its push deliverer. */
export interface EventDelivery {
  /** Stops the deliverer: pushes in flight are settled, leases released. */
  stop(): Promise<void>;
}

/**
 * Starts the push deliverer of this process (docs/events.md). Every serving process runs one,
 * workers too: the store's leases decide which process sends to which receiver. Makes sure there is
 * a current signing key first (of several nodes starting at once, one key wins); a store that
 * refuses (unreachable at that moment) does not stop serve: the deliverer tries again.
 */
export async function startEventDelivery(engine: Engine, log: FastifyBaseLogger, metrics?: TokenctlMetrics): Promise<EventDelivery> {
  // Its own rotation (the key 90 days old) is audited like an operator's, by this node.
  const keys = new SigningKeys(engine.store, Date.now, (key) => engine.keyRotationAudit(`serve:${engine.config.node}`, key));
  const keysCheckedAt = Date.now();
  try {
    await keys.ensureAll();
  } catch (err) {
    // Not fatal: tokens are served, and the deliverer's housekeeping tries again in a minute.
    log.error({ err }, err instanceof KeyRotationError ? KEY_ROTATION_REFUSED : 'security events: no signing key yet; events are kept and sent once the store allows');
  }
  const deliverer = new PushDeliverer({
    store: engine.store,
    keys,
    issuer: () => engine.config.issuer,
    owner: `${engine.config.node}:${process.pid}:${Math.random().toString(36).slice(2, 8)}`,
    log: (level, fields, message) => log[level](fields, message),
    lagWarningMs: engine.config.eventLagWarningMs,
    ...(metrics ? { onOutcome: outcomeCounter(metrics) } : {}),
  });
  // The keys were just seen to: its first housekeeping does not try (and log) the same again at once.
  deliverer.start({ keysCheckedAt });
  return { stop: () => deliverer.stop() };
}

/** `tokenctl_event_deliveries_total{outcome}`, its three children bound once. */
function outcomeCounter(metrics: TokenctlMetrics): (kind: 'delivered' | 'retry' | 'dead') => void {
  const children = { delivered: metrics.eventDeliveries.labels('delivered'), retry: metrics.eventDeliveries.labels('retry'), dead: metrics.eventDeliveries.labels('dead') };
  return (kind) => children[kind].inc();
}
