import type { PurgeCommandResult } from './results.js';
import { formatCount, plural } from './layout.js';
import { color } from './style.js';
import { formatDate, formatElapsed } from './time.js';

export function purgeQuestion(count: number, before: number, audit?: { count: number; before: number }): string {
  const lines = audit === undefined || audit.count === 0 ? '' : `, and ${plural(audit.count, 'audit line')} written before ${formatDate(audit.before)}`;
  return `Delete ${plural(count, 'token')} expired or revoked before ${formatDate(before)}${lines}?`;
}

/** One line of the progress bar, redrawn with `\r` on a terminal: `[#####-----]  50%  500/1000`. */
export function progressLine(done: number, total: number, width = 30): string {
  const ratio = total <= 0 ? 1 : Math.min(1, done / total);
  const filled = Math.round(ratio * width);
  const percent = `${Math.floor(ratio * 100)}%`.padStart(4);
  return `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${percent}  ${done}/${total} deleted`;
}

export function renderPurge(r: PurgeCommandResult): string {
  const cutoff = `expired or revoked before ${formatDate(r.before)}`;
  const auditCutoff = r.audit_before === null ? '' : ` written before ${formatDate(r.audit_before)}`;
  if (r.dry_run) {
    const audit = r.audit_before === null ? '' : `; ${plural(r.audit_purgeable, 'audit line')}${auditCutoff}`;
    return `${plural(r.purgeable, 'token')} ${cutoff}${audit} would be deleted. ${color.dim('Dry run: nothing was deleted.')}`;
  }
  if (r.interrupted) return color.yellow(`Purge interrupted: ${formatCount(r.deleted)} of ${formatCount(r.purgeable)} deleted (${cutoff}).`);
  const also = [
    ...(r.grants_deleted > 0 ? [`${plural(r.grants_deleted, 'grant')} with no token left`] : []),
    ...(r.audit_deleted > 0 ? [`${plural(r.audit_deleted, 'audit line')}${auditCutoff}`] : []),
  ];
  const rest = also.length === 0 ? '' : ` Also deleted: ${also.join(', ')}.`;
  if (r.deleted === 0) return also.length === 0 ? color.dim(`No tokens ${cutoff}: nothing to purge.`) : `No tokens ${cutoff}.${rest}`;
  return `${color.green(`Purged ${plural(r.deleted, 'token')}`)} ${cutoff} in ${formatElapsed(r.elapsed_ms)}.${rest}`;
}
