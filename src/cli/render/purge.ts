import type { PurgeCommandResult } from './results.js';
import { formatCount, plural, storeNote } from './layout.js';
import { progressBar } from './progress.js';
import { color } from './style.js';
import { formatDate, formatElapsed } from './time.js';

export function purgeQuestion(count: number, before: number): string {
  return `Delete ${plural(count, 'token')} expired or revoked before ${formatDate(before)}?`;
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
  if (r.dry_run) return `${plural(r.purgeable, 'token')} ${cutoff} would be deleted. ${color.dim('Dry run: nothing was deleted.')}`;
  if (r.interrupted) return color.yellow(`Purge interrupted: ${formatCount(r.deleted)} of ${formatCount(r.purgeable)} deleted (${cutoff}).`);
  if (r.deleted === 0) return color.dim(`No tokens ${cutoff}: nothing to purge.`);
  return `${color.green(`Purged ${plural(r.deleted, 'token')}`)} ${cutoff} in ${formatElapsed(r.elapsed_ms)}.`;
}
