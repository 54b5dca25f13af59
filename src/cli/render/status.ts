import type { StatusReport } from './results.js';
import { fields, formatCount, plural, table } from './layout.js';
import { color, paintState } from './style.js';
import { formatInstant } from './time.js';

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

/**
 * `2 receivers, nothing pending`, or what waits and since when; yellow with a pointer to `receiver
 * list` when a receiver is not keeping up (pending past `--event-lag-warning`, or dead letters).
 */
function renderEvents(e: StatusReport['events'], now: number): string {
  if (e.receivers === 0) return color.dim('no receiver (none are written)');
  const parts = [plural(e.receivers, 'receiver')];
  if (e.pending === 0) parts.push('nothing pending');
  else parts.push(`${formatCount(e.pending)} pending${e.oldest_pending_at === null ? '' : ` since ${formatInstant(e.oldest_pending_at, now)}`}`);
  if (e.dead > 0) parts.push(plural(e.dead, 'dead letter'));
  const text = parts.join(', ');
  if (e.behind.length === 0) return text;
  return `${color.yellow(`${text}; behind: ${e.behind.join(', ')}`)} ${color.dim('— tokenctl receiver list shows why')}`;
}
