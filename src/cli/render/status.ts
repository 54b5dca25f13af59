import type { StatusReport } from './results.js';
import { fields, table } from './layout.js';
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
    ]),
    '',
    counts.replace(/^/gm, '  '),
  ].join('\n');
}
