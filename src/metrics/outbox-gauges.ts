import { Gauge, type Registry } from 'prom-client';
import type { ReceiverStatus } from '../store/store.js';

/**
 * The outbox of security events per receiver (docs/events.md), read from the store at each
 * scrape: what waits, since when, and what was given up on. The label is the receiver's id,
 * chosen by the operator (a few per deployment), so its cardinality is bounded by them. With
 * `--workers N` every worker reads the same store: the aggregate is their maximum, not a sum.
 */
export const OUTBOX_GAUGES = {
  pending: 'tokenctl_event_pending_deliveries',
  oldestAge: 'tokenctl_event_oldest_pending_age_seconds',
  dead: 'tokenctl_event_dead_letters',
} as const;

/** `receivers` lists them (undefined: no store yet); `now` is the scrape's time (ms). */
export function registerOutboxGauges(registry: Registry, receivers: () => Promise<ReceiverStatus[]> | undefined, now: () => number = Date.now): void {
  const registers = [registry];
  // One read of the store per scrape, shared by the three gauges (prom-client collects them in turn).
  let reading: { at: number; list: Promise<ReceiverStatus[]> } | undefined;
  const read = (): Promise<ReceiverStatus[]> => {
    const at = now();
    if (!reading || at - reading.at >= 1000) {
      // A store that does not answer leaves the gauges empty for this scrape rather than failing it.
      reading = { at, list: (receivers() ?? Promise.resolve([])).catch(() => []) };
    }
    return reading.list;
  };
  const gauge = (name: string, help: string, value: (r: ReceiverStatus, at: number) => number | undefined) =>
    new Gauge({
      name,
      help,
      labelNames: ['receiver'],
      registers,
      aggregator: 'max',
      async collect() {
        const list = await read();
        const at = now();
        this.reset();
        for (const r of list) {
          const v = value(r, at);
          if (v !== undefined) this.set({ receiver: r.id }, v);
        }
      },
    });
  gauge(OUTBOX_GAUGES.pending, 'Security event deliveries waiting per receiver (push: to be sent or retried; poll: not yet acknowledged)', (r) => r.pending);
  gauge(OUTBOX_GAUGES.oldestAge, "Age of a receiver's oldest pending delivery, from its event's time (0 with nothing pending)", (r, at) => (r.oldestPendingAt === null ? 0 : Math.max(0, (at - r.oldestPendingAt) / 1000)));
  gauge(OUTBOX_GAUGES.dead, 'Dead letters per receiver: deliveries given up on (a 400, or pending or failing past its receiver retention); receiver retry requeues them', (r) => r.dead);
}
