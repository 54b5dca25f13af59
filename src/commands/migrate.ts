import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { Flags } from '@oclif/core';
import { BaseCommand } from '../cli/base-command.js';
import { CliError, EXIT } from '../cli/errors.js';
import { dryRunFlag, yesFlag } from '../cli/flags.js';
import { confirmOrStop } from '../cli/prompts.js';
import { onInterrupt } from '../cli/interrupt.js';
import { fields, formatCount, plural } from '../cli/render/layout.js';
import { color } from '../cli/render/style.js';
import { formatElapsed } from '../cli/render/time.js';
import {
  DEFAULT_BATCH_SIZE,
  MigrateError,
  migrateStore,
  planMigration,
  type CopyCounts,
  type MigrationReport,
  type StoreContents,
} from '../store/migrate-store.js';
import { isPostgresUrl } from '../store/open-store.js';
import type { TokenStore } from '../store/store.js';

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
  /** Clients and tokens read back from the target field for field identical to the source's. */
  verified: number;
  /** With --merge: records the target held in another version (kept), e.g. `token <jti>: revokedAt`; the first 20. */
  differing_records: string[];
  elapsed_ms: number;
  /** Stopped by Ctrl-C or SIGTERM between batches (exit 130): finish with --merge. */
  interrupted: boolean;
}

export default class Migrate extends BaseCommand<typeof Migrate> {
  static override summary = 'Copy a store into another, e.g. a SQLite file into PostgreSQL to run several nodes';
  static override description = `Copies every client (with its secret hash), every token (digest, grant, revoked and replaced state, times) and the audit trail, so that every token issued before keeps working against the new store, then reads every client and token back from the target and checks that each is identical.

Stop every server and command that uses the source first: a source that changes while it is copied is reported as an error. Ctrl-C or SIGTERM stops it after the batch under way, says how far it got, leaves an audit line in the target and exits 130; --merge then finishes it. The target must be empty (a new PostgreSQL schema, or a new file) unless --merge is given; with --merge only what the target lacks is copied and nothing it holds is changed, which also completes an interrupted migration. A second identical run is refused (or, with --merge, copies nothing). The source is never changed. The target is --to, or else --db / TOKENCTL_DB.

Tokens are read, written and verified a page at a time (--batch-size), so memory stays flat however many tokens the store holds. Purging the source first leaves expired and revoked tokens behind.`;

  static override examples = [
    {
      description: 'Move the default store into PostgreSQL (a schema of its own)',
      command: '<%= config.bin %> <%= command.id %> --from ~/.local/share/tokenctl/tokens.db --to "postgres://tokenctl@db.internal/auth?schema=tokenctl"',
    },
    { description: 'See what would be copied, and whether the target is empty', command: '<%= config.bin %> <%= command.id %> --from tokens.db --to "$PG_URL" --dry-run' },
    { description: 'Unattended, with a JSON summary', command: '<%= config.bin %> <%= command.id %> --from tokens.db --to "$PG_URL" --yes --json' },
    { description: 'Finish an interrupted migration', command: '<%= config.bin %> <%= command.id %> --from tokens.db --to "$PG_URL" --merge --yes' },
  ];

  static override flags = {
    from: Flags.string({ description: 'Store to copy from: a SQLite file (or a postgres:// URL); it must exist', required: true, helpValue: '<file|url>' }),
    to: Flags.string({ description: 'Store to copy into: a postgres:// URL, ?schema=NAME to use a schema of its own (or a SQLite file) [default: --db]', helpValue: '<url|file>' }),
    merge: Flags.boolean({ description: 'Accept a target that holds records: copy only what it lacks, change nothing it has', default: false }),
    yes: yesFlag,
    'dry-run': dryRunFlag,
    'batch-size': Flags.integer({ description: 'Tokens read, written (one target transaction) and verified per step', default: DEFAULT_BATCH_SIZE, min: 1, helpValue: '<n>' }),
  };

  async run(): Promise<MigrateResult> {
    const f = this.flags;
    const to = f.to ?? f.db;
    if (!to) throw new CliError('name the store to copy into with --to (or --db / TOKENCTL_DB)', EXIT.usage, 'usage', 'e.g. --to "postgres://user@host/db?schema=tokenctl"');
    if (sameLocation(f.from, to)) throw new CliError(`--from and --to name the same store: ${to}`, EXIT.usage, 'usage');
    if (!isPostgresUrl(f.from) && !existsSync(f.from)) {
      throw new CliError(`no store to copy from at ${resolve(f.from)}: the file does not exist`, EXIT.usage, 'no_source', 'the default store is tokens.db in the tokenctl data directory (tokenctl status shows where)');
    }
    const { openStore } = await import('../store/open-store.js');
    const stores: TokenStore[] = [];
    try {
      const source = await openStore(f.from, { create: false });
      stores.push(source);
      const target = await openStore(to);
      stores.push(target);
      return await this.migrate(source, target);
    } catch (error) {
      if (error instanceof MigrateError) throw new CliError(error.message, error.code === 'same_store' ? EXIT.usage : EXIT.failure, error.code, error.hint);
      throw error;
    } finally {
      await Promise.all(stores.map((s) => s.close().catch(() => undefined)));
    }
  }

  private async migrate(source: TokenStore, target: TokenStore): Promise<MigrateResult> {
    const f = this.flags;
    const plan = await planMigration(source, target, { merge: f.merge });
    const planned = (source: number): CopyCounts => ({ source, copied: 0, present: 0, differing: 0 });
    const nothingYet: MigrationReport = {
      clients: planned(plan.source.clients),
      tokens: planned(plan.source.tokenTotal),
      audit: planned(plan.source.audit),
      verified: 0,
      differences: [],
      elapsedMs: 0,
    };
    let result = toResult(plan.source, plan.target, f['dry-run'], f.merge, nothingYet);
    if (!f['dry-run']) {
      await confirmOrStop(question(plan.source, target.location), { yes: f.yes, declined: 'Nothing copied' });
      const showProgress = Boolean(process.stderr.isTTY) && !this.jsonEnabled();
      const onProgress = showProgress ? (done: number, total: number) => process.stderr.write(`\rtokens: ${done}/${total}`) : undefined;
      const interrupt = onInterrupt((text) => process.stderr.write(showProgress ? `\r\x1b[2K${text.trimStart()}` : text));
      try {
        const report = await migrateStore(source, target, { actor: this.actor(), merge: f.merge, batchSize: f['batch-size'], now: plan.now, onProgress, signal: interrupt.signal });
        result = toResult(plan.source, plan.target, false, f.merge, report);
      } finally {
        interrupt.dispose();
        if (showProgress) process.stderr.write('\r\x1b[2K');
      }
    }
    if (!this.jsonEnabled()) this.log(result.interrupted ? renderInterrupted(result) : render(result));
    if (result.interrupted) process.exitCode = EXIT.interrupted;
    return result;
  }
}

/** Paths compared as absolute paths, URLs as written (the stores compare their locations again). */
function sameLocation(a: string, b: string): boolean {
  if (isPostgresUrl(a) || isPostgresUrl(b)) return a === b;
  return resolve(a) === resolve(b);
}

function contentsJson(c: StoreContents): MigrateContents {
  return { clients: c.clients, tokens: { total: c.tokenTotal, ...c.tokens }, audit: c.audit };
}

function countsJson(c: CopyCounts): MigrateCounts {
  return { source: c.source, copied: c.copied, already_present: c.present, differing: c.differing };
}

function toResult(
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

function question(source: StoreContents, to: string): string {
  return `Copy ${describeContents(contentsJson(source))} from ${source.location} into ${to}? Every server and command using the source must be stopped first.`;
}

function countLine(c: MigrateCounts, merge: boolean): string {
  if (!merge) return `${c.copied} copied`;
  const differing = c.differing > 0 ? color.yellow(`, ${c.differing} of them different (the target's kept)`) : '';
  return `${c.copied} copied, ${c.already_present} already there${differing}`;
}

function render(r: MigrateResult): string {
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
