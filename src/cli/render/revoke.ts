import type { LocalRevocationResult, RevocationResult, RevokeBulkResult } from './results.js';
import { formatCount, plural, storeNote } from './layout.js';
import { color } from './style.js';
import { formatElapsed } from './time.js';

/** Spec 2.2: the code in colour, then the message. */
export function renderRevocation(r: RevocationResult | LocalRevocationResult): string {
  const code =
    r.code === 'token_revoke_success' ? color.green(r.code) : r.code === 'token_already_revoked' ? color.yellow(r.code) : color.red(r.code);
  return `${code}  ${r.message}` + ('store' in r ? `\n${storeNote(r.store)}` : '');
}

/** The question a bulk revocation asks. */
export function bulkQuestion(selector: string, count: number): string {
  return `Revoke ${plural(count, 'active token')} (${selector})?`;
}

/** What a bulk revocation did, or with --dry-run would do. */
export function renderBulkRevocation(r: RevokeBulkResult): string {
  return `${bulkOutcome(r)}\n${storeNote(r.store)}`;
}

function bulkOutcome(r: RevokeBulkResult): string {
  if (r.dry_run) return `${plural(r.matched, 'active token')} (${r.selector}) would be revoked. ${color.dim('Dry run: nothing was revoked.')}`;
  if (r.interrupted) return color.yellow(`Revocation interrupted: ${formatCount(r.revoked)} of ${formatCount(r.matched)} revoked (${r.selector}).`);
  if (r.matched === 0 && r.revoked === 0) return color.dim(`No active tokens (${r.selector}): all are revoked or expired; nothing to revoke.`);
  return `${color.green(`Revoked ${plural(r.revoked, 'token')}`)} (${r.selector}) in ${formatElapsed(r.elapsed_ms)}.`;
}

/** A bulk selection in words: `user alice of client web`, `jti 0b6f…`. */
export function describeSelection(s: { jti?: string; user?: string; client?: string }): string {
  if (s.jti !== undefined) return `jti ${s.jti}`;
  if (s.user !== undefined) return `user ${s.user}` + (s.client !== undefined ? ` of client ${s.client}` : '');
  return `client ${s.client ?? ''}`;
}
