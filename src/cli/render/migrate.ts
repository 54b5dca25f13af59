import type { CopyCounts, MigrationReport, StoreContents } from '../../migrate/migrate-store.js';
import { fields, formatCount, plural } from './layout.js';
import { color } from './style.js';
import { formatElapsed } from './time.js';

/** What a store holds, in `--json`. */
export interface MigrateContents {
  clients: number;
  tokens: { total: number; active: number; expired: number; revoked: number };
  audit: number;
}

/** Per kind of record, in `--json`. */
export interface MigrateCounts {
  source: number;
  copied: number;
  /** Already in the target (only with --merge); left unchanged. */
  already_present: number;
  /** Of those, how many differ from the source's (the target's version was kept). */
  differing: number;
}

/** `migrate`. */
export interface MigrateResult {
  from: string;
  to: string;
  dry_run: boolean;
  merge: boolean;
  source: MigrateContents;
  /** What the target held before this run. */
  target_before: MigrateContents;
  clients: MigrateCounts;
  tokens: MigrateCounts;
  audit: MigrateCounts;
  /**
   * Security events: receivers and signing keys copied (keys only into a target without keys of
   * its own); undelivered events (pending and dead letters) stay in the source. Null: not run.
   */
  events: { receivers: MigrateCounts; signing_keys: MigrateCounts; undelivered_not_copied: number } | null;
  /** Clients and tokens read back from the target field for field identical to the source's. */
  verified: number;
  /** With --merge: records the target held in another version (kept), e.g. `token <jti>: revokedAt`; the first 20. */
  differing_records: string[];
  elapsed_ms: number;
  /** Stopped by Ctrl-C or SIGTERM between batches (exit 130): finish with --merge. */
  interrupted: boolean;
}

function contentsJson(c: StoreContents): MigrateContents {
  return { clients: c.clients, tokens: { total: c.tokenTotal, ...c.tokens }, audit: c.audit };
}

function countsJson(c: CopyCounts): MigrateCounts {
  return { source: c.source, copied: c.copied, already_present: c.present, differing: c.differing };
}

/** The `--json` document of `migrate`, from the plan's contents and the copy's report. */
export function migrateResult(
  source: StoreContents,
  target: StoreContents,
  dryRun: boolean,
  merge: boolean,
  report: MigrationReport,
): MigrateResult {
  return {
    from: source.location,
    to: target.location,
    dry_run: dryRun,
    merge,
    source: contentsJson(source),
    target_before: contentsJson(target),
    clients: countsJson(report.clients),
    tokens: countsJson(report.tokens),
    audit: countsJson(report.audit),
    events: report.events
      ? { receivers: countsJson(report.events.receivers), signing_keys: countsJson(report.events.signingKeys), undelivered_not_copied: report.events.deliveriesNotCopied }
      : null,
    verified: report.verified,
    differing_records: report.differences,
    elapsed_ms: report.elapsedMs,
    interrupted: report.interrupted ?? false,
  };
}

function describeContents(c: MigrateContents): string {
  const t = c.tokens;
  return `${plural(c.clients, 'client')}, ${plural(t.total, 'token')} (${t.active} active, ${t.expired} expired, ${t.revoked} revoked), ${plural(c.audit, 'audit entry', 'audit entries')}`;
}

/** The question `migrate` asks before copying. */
export function migrateQuestion(source: StoreContents, to: string): string {
  return `Copy ${describeContents(contentsJson(source))} from ${source.location} into ${to}? Every server and command using the source must be stopped first.`;
}

function countLine(c: MigrateCounts, merge: boolean): string {
  if (!merge) return `${c.copied} copied`;
  const differing = c.differing > 0 ? color.yellow(`, ${c.differing} of them different (the target's kept)`) : '';
  return `${c.copied} copied, ${c.already_present} already there${differing}`;
}

/** What `migrate` prints: the dry run, the copy, or how far an interrupted run got. */
export function renderMigrate(r: MigrateResult): string {
  if (r.interrupted) return renderInterrupted(r);
  if (r.dry_run) {
    return [
      fields([
        ['From', `${r.from}: ${describeContents(r.source)}`],
        ['To', `${r.to}: ${r.target_before.clients + r.target_before.tokens.total + r.target_before.audit === 0 ? 'empty' : describeContents(r.target_before)}`],
      ]),
      color.dim('Dry run: nothing was copied.'),
    ].join('\n');
  }
  const copied = r.clients.copied + r.tokens.copied + r.audit.copied;
  const head =
    copied > 0
      ? `Migrated ${r.from} into ${r.to} in ${formatElapsed(r.elapsed_ms)}.`
      : `Nothing to copy: ${r.to} already holds every record of ${r.from}${r.clients.differing + r.tokens.differing > 0 ? ', some in another version' : ''}.`;
  return [
    color.green(head),
    fields([
      ['Clients', countLine(r.clients, r.merge)],
      ['Tokens', `${countLine(r.tokens, r.merge)}; in the source ${r.source.tokens.active} active, ${r.source.tokens.expired} expired, ${r.source.tokens.revoked} revoked`],
      ['Audit entries', countLine(r.audit, r.merge)],
      ...eventsLines(r),
      ['Verified', `${plural(r.verified, 'record')} read back identical from the target`],
    ]),
    ...differing(r),
    `Next: point every node's --db (or TOKENCTL_DB) at ${r.to}, with the same --issuer and token settings, and start them.`,
  ].join('\n');
}

function renderInterrupted(r: MigrateResult): string {
  return [
    color.yellow(`Migration interrupted: ${formatCount(r.tokens.source)} of ${formatCount(r.source.tokens.total)} tokens handled, ${formatCount(r.tokens.copied)} copied into ${r.to} (and ${plural(r.clients.copied, 'client')}); the audit trail not yet.`),
    `Finish it: tokenctl migrate --from ${r.from} --to ${r.to} --merge`,
  ].join('\n');
}

/** Receivers and signing keys, when the source had any; and the events that were not copied. */
function eventsLines(r: MigrateResult): [string, string][] {
  const e = r.events;
  if (!e || e.receivers.source + e.signing_keys.source === 0) return [];
  const undelivered =
    e.undelivered_not_copied > 0 ? color.yellow(`; ${plural(e.undelivered_not_copied, 'undelivered event')} stay in the source (not copied)`) : '';
  return [
    ['Receivers', countLine(e.receivers, r.merge) + undelivered],
    ['Signing keys', e.signing_keys.copied > 0 || e.signing_keys.source === 0 ? `${e.signing_keys.copied} copied` : `none copied: ${r.to} has keys of its own`],
  ];
}

/** With --merge: the records whose two versions differ, for the operator to check. */
function differing(r: MigrateResult): string[] {
  const n = r.clients.differing + r.tokens.differing;
  if (n === 0) return [];
  const more = n > r.differing_records.length ? [`  … and ${n - r.differing_records.length} more`] : [];
  return [
    color.yellow(`${plural(n, 'record')} differed, and the target's version was kept (check which store is right; e.g. tokenctl revoke --jti):`),
    ...r.differing_records.map((d) => `  ${d}`),
    ...more,
  ];
}

/** The report of a migration not (yet) run: the source's counts, nothing copied. */
export function plannedReport(source: StoreContents): MigrationReport {
  const planned = (n: number): CopyCounts => ({ source: n, copied: 0, present: 0, differing: 0 });
  return { clients: planned(source.clients), tokens: planned(source.tokenTotal), audit: planned(source.audit), verified: 0, differences: [], elapsedMs: 0 };
}
