import type { ReceiverStatusView, ReceiverView } from '../../engine/receivers.js';
import type { SigningKeyView } from '../../engine/signing-keys.js';
import { fields, plural, storeNote, table } from './layout.js';
import { printable } from './printable.js';
import { color } from './style.js';
import { formatInstant, formatSpan } from './time.js';

function where(r: ReceiverView): string {
  return printable(r.delivery === 'push' ? (r.endpoint_url ?? '') : `poll as client ${r.client_id ?? ''}`);
}

/** Its stream (SSF 1.0 §8.1.1): the events requested (those not supported marked), the SETs' algorithm, a status other than enabled. */
function streamFields(r: ReceiverView): [string, string | undefined][] {
  const events = r.events_requested.map((e) => printable(r.events_delivered.includes(e) ? e : `${e} (not supported: not delivered)`));
  return [
    ['events', events.length === 0 ? color.yellow('none requested') : events.join(', ')],
    ['signing', r.signing_alg],
    ['stream status', r.status === 'enabled' ? undefined : color.yellow(r.status)],
  ];
}

/** `receiver add`: what was registered (the Authorization value never). */
export function renderReceiverAdded(r: ReceiverView): string {
  return [
    color.green(`Added ${r.delivery} receiver ${color.bold(r.id)}`),
    '',
    fields([
      ['delivery', r.delivery === 'push' ? 'push (RFC 8935)' : 'poll (RFC 8936): POST /events/poll'],
      [r.delivery === 'push' ? 'endpoint' : 'client', where(r).replace(/^poll as client /, '')],
      ['audience', printable(r.audience)],
      ['authorization', r.delivery === 'push' ? (r.authorization ? 'sent (not shown)' : 'none') : undefined],
      ['ca', r.ca ? 'own CA trusted' : undefined],
      ['network', r.allow_private_network ? 'private addresses allowed' : undefined],
      ['retention', `${formatSpan(r.retention_ms)} (then a dead letter)`],
      ...streamFields(r),
    ]),
    '',
    color.dim('Every revocation from now on is delivered to it.'),
  ].join('\n');
}

/** `receiver list`: one row per receiver, with its backlog and its last error. */
export function renderReceiverList(receivers: ReceiverStatusView[], now: number): string {
  if (receivers.length === 0) return color.dim('No receivers. Add one with: tokenctl receiver add ID --push URL (or --poll --client CLIENT_ID)');
  // Every field is printed through printable(): the last error is the receiver's own text.
  const rows = receivers.map((r) => [
    printable(r.id),
    r.delivery,
    where(r),
    String(r.pending),
    r.dead > 0 ? color.red(String(r.dead)) : '0',
    r.oldest_pending_at === null ? '-' : formatSpan(Math.max(0, now - r.oldest_pending_at)),
    formatSpan(r.retention_ms),
    r.last_delivered_at === null ? '-' : formatInstant(r.last_delivered_at, now),
    r.last_error === null ? '' : color.yellow(printable(r.last_error)),
  ]);
  return table(['ID', 'DELIVERY', 'WHERE', 'PENDING', 'DEAD', 'OLDEST', 'RETENTION', 'LAST DELIVERED', 'LAST ERROR'], rows);
}

/** `receiver show` and `receiver update`: one receiver, with how its deliveries stand. */
export function renderReceiverStatus(r: ReceiverStatusView, now: number): string {
  return fields([
    ['id', printable(r.id)],
    ['delivery', r.delivery === 'push' ? 'push (RFC 8935)' : 'poll (RFC 8936): POST /events/poll'],
    [r.delivery === 'push' ? 'endpoint' : 'client', where(r).replace(/^poll as client /, '')],
    ['audience', printable(r.audience)],
    ['authorization', r.delivery === 'push' ? (r.authorization ? 'sent (not shown)' : 'none') : undefined],
    ['retention', `${formatSpan(r.retention_ms)} (then a dead letter)`],
    ...streamFields(r),
    ['pending', r.oldest_pending_at === null ? String(r.pending) : `${r.pending}, the oldest ${formatSpan(Math.max(0, now - r.oldest_pending_at))} old`],
    ['dead letters', r.dead > 0 ? color.red(String(r.dead)) : '0'],
    ['last delivered', r.last_delivered_at === null ? '-' : formatInstant(r.last_delivered_at, now)],
    ['last error', r.last_error === null ? undefined : color.yellow(printable(r.last_error))],
  ]);
}

export function renderReceiverRemoved(r: { id: string; dropped: number; store: string }): string {
  const lost = r.dropped;
  const line = color.green(`Removed receiver ${color.bold(r.id)}`) + (lost > 0 ? color.dim(` (${plural(lost, 'pending or dead delivery', 'pending or dead deliveries')} dropped)`) : '');
  return `${line}\n${storeNote(r.store)}`;
}

export function renderReceiverRetried(id: string, requeued: number): string {
  return requeued === 0 ? color.dim(`Receiver ${id} has no dead deliveries.`) : color.green(`Requeued ${plural(requeued, 'dead delivery', 'dead deliveries')} of ${color.bold(id)}: they go out now, in order.`);
}

/** `signing-key list`. */
export function renderSigningKeys(keys: SigningKeyView[], now: number): string {
  if (keys.length === 0) return color.dim('No signing key yet: serve makes one at start, or run tokenctl signing-key rotate');
  const rows = keys.map((k) => [
    k.kid,
    k.alg,
    k.current ? color.green('current') : k.published ? 'retired, published' : color.dim('retired'),
    formatInstant(k.createdAt, now),
    k.retiredAt === null ? '-' : formatInstant(k.retiredAt, now),
  ]);
  return table(['KID', 'ALG', 'STATE', 'CREATED', 'RETIRED'], rows);
}
