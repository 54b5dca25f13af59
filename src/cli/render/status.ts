import type { StatusReport } from './results.js';
import { fields, formatCount, plural, table } from './layout.js';
import { color, paintState } from './style.js';
import { formatInstant } from './time.js';

/** A pending event older than this, or any dead letter, means a receiver is not keeping up: shown in yellow. */
const STALE_PENDING_MS = 3_600_000;

export function renderStatus(s: StatusReport, now: number): string {
  const counts = table(
    ['', 'ACTIVE', 'EXPIRED', 'REVOKED'],
    (['access_token', 'refresh_token'] as const).map((type) => [
      type === 'access_token' ? 'access' : 'refresh',
      paintState('active', String(s.tokens[type].active)),
      paintState('expired', String(s.tokens[type].expired)),
      paintState('revoked', String(s.tokens[type].revoked)),
    ]),
  );
  const oldest =
    s.oldest_expired_at === null ? color.dim('none') : `${formatInstant(s.oldest_expired_at, now)} ${color.dim('— tokenctl purge deletes it')}`;
  return [
    fields([
      ['store', s.store],
      ['schema', `version ${s.schema_version}`],
      ['clients', String(s.clients)],
      ['oldest expired token', oldest],
      ['security events', renderEvents(s.events, now)],
    ]),
    '',
    counts.replace(/^/gm, '  '),
  ].join('\n');
}

/** `2 receivers, nothing pending`, or what waits and since when; yellow with a pointer to `receiver list` when a receiver is not keeping up. */
function renderEvents(e: StatusReport['events'], now: number): string {
  if (e.receivers === 0) return color.dim('no receiver (none are written)');
  const parts = [plural(e.receivers, 'receiver')];
  if (e.pending === 0) parts.push('nothing pending');
  else parts.push(`${formatCount(e.pending)} pending${e.oldest_pending_at === null ? '' : ` since ${formatInstant(e.oldest_pending_at, now)}`}`);
  if (e.dead > 0) parts.push(plural(e.dead, 'dead letter'));
  const behind = e.dead > 0 || (e.oldest_pending_at !== null && now - e.oldest_pending_at > STALE_PENDING_MS);
  const text = parts.join(', ');
  return behind ? `${color.yellow(text)} ${color.dim('— tokenctl receiver list shows which')}` : text;
}
