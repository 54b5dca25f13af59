import type { PurgeCommandResult } from './results.js';
import { formatCount, plural, storeNote } from './layout.js';
import { progressBar } from './progress.js';
import { color } from './style.js';
import { formatDate, formatElapsed } from './time.js';

export function purgeQuestion(count: number, before: number, audit?: { count: number; before: number }): string {
  const lines = audit === undefined || audit.count === 0 ? '' : `, and ${plural(audit.count, 'audit line')} written before ${formatDate(audit.before)}`;
  return `Delete ${plural(count, 'token')} expired or revoked before ${formatDate(before)}${lines}?`;
}

/** Purge's progress bar: `[#####-----]  50%  500/1000 deleted`. */
export function progressLine(done: number, total: number, width = 30): string {
  return progressBar(done, total, 'deleted', width);
}

export function renderPurge(r: PurgeCommandResult): string {
  return `${purgeOutcome(r)}\n${storeNote(r.store)}`;
}

function purgeOutcome(r: PurgeCommandResult): string {
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
