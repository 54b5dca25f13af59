import type { AuditEntry } from './results.js';
import { formatCount, table } from './layout.js';
import { color } from './style.js';
import { formatDate, formatRelative } from './time.js';

/** The audit trail, newest first, as the engine returns it. */
export function renderAudit(entries: AuditEntry[], now: number): string {
  if (entries.length === 0) return color.dim('No audit entries match.');
  const rows = entries.map((e) => [
    `${formatDate(e.at)} ${color.dim(`(${formatRelative(e.at, now)})`)}`,
    e.actor,
    color.bold(e.action),
    e.target,
    String(e.count),
    color.dim(e.detail),
  ]);
  return table(['WHEN', 'ACTOR', 'ACTION', 'TARGET', 'COUNT', 'DETAIL'], rows);
}

/** Under the page, on stderr: how many of how many, and the cursor of the next page (as token list). */
export function renderAuditFooter(shown: number, total: number, nextCursor: string | null, paged: boolean): string {
  const of = `${formatCount(shown)} of ${formatCount(total)}`;
  return color.dim(nextCursor ? `Showing ${of}; next page: --cursor ${nextCursor}` : `Showing ${of}${paged ? ' (last page)' : ''}.`);
}
