import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { Flags } from '@oclif/core';
import { BaseCommand } from '../cli/base-command.js';
import { CliError, EXIT } from '../cli/errors.js';
import { dryRunFlag, yesFlag } from '../cli/flags.js';
import { interruptible } from '../cli/progress.js';
import { confirmOrStop } from '../cli/prompts.js';
import { migrateQuestion, migrateResult, plannedReport, renderMigrate, type MigrateResult } from '../cli/render/migrate.js';
import { DEFAULT_BATCH_SIZE, migrateStore, planMigration } from '../migrate/migrate-store.js';
import { storeKindOf } from '../store/open-store.js';
import { NoStoreError, type TokenStore } from '../store/store.js';

export type { MigrateResult };

/** `migrate` without --from: the store's schema brought up to this build's (rolling upgrades). */
export interface SchemaMigrateResult {
  store: string;
  schema_version: number;
}

export default class Migrate extends BaseCommand<typeof Migrate> {
  static override summary = 'Copy a store into another, e.g. a SQLite file into PostgreSQL to run several nodes; without --from, bring a store\'s schema up to date';
  static override description = `Copies every client (with its secret hash), every token (digest, grant, revoked and replaced state, times) and the audit trail, so that every token issued before keeps working against the new store, then reads every client and token back from the target and checks that each is identical.

Stop every server and command that uses the source first: a source that changes while it is copied is reported as an error. Ctrl-C or SIGTERM stops it after the batch under way, says how far it got, leaves an audit line in the target and exits 130; --merge then finishes it. The target must be empty (a new PostgreSQL schema, or a new file) unless --merge is given; with --merge only what the target lacks is copied and nothing it holds is changed, which also completes an interrupted migration. A second identical run is refused (or, with --merge, copies nothing). The source is never changed. The target is --to, or else --db / TOKENCTL_DB.

Tokens are read, written and verified a page at a time (--batch-size), so memory stays flat however many tokens the store holds. Purging the source first leaves expired and revoked tokens behind.

Without --from, applies the schema migrations of this build to --db (or --to) and copies nothing: run it ahead of a rolling upgrade, before the nodes are replaced one by one; nodes of the release before keep running on a schema whose new steps are all "expand" (docs/scale-out.md, "Rolling upgrades").`;

  static override examples = [
    {
      description: 'Move the default store into PostgreSQL (a schema of its own)',
      command: '<%= config.bin %> <%= command.id %> --from ~/.local/share/tokenctl/tokens.db --to "postgres://tokenctl@db.internal/auth?schema=tokenctl"',
    },
    { description: 'See what would be copied, and whether the target is empty', command: '<%= config.bin %> <%= command.id %> --from tokens.db --to "$PG_URL" --dry-run' },
    { description: 'Unattended, with a JSON summary', command: '<%= config.bin %> <%= command.id %> --from tokens.db --to "$PG_URL" --yes --json' },
    { description: 'Finish an interrupted migration', command: '<%= config.bin %> <%= command.id %> --from tokens.db --to "$PG_URL" --merge --yes' },
    { description: 'Apply a new release\'s schema changes ahead of its nodes', command: '<%= config.bin %> <%= command.id %> --db "$PG_URL"' },
  ];

  static override flags = {
    from: Flags.string({ description: 'Store to copy from: a SQLite file (or a postgres:// URL); it must exist. Without it, only the schema of --db is brought up to date', helpValue: '<file|url>' }),
    to: Flags.string({ description: 'Store to copy into: a postgres:// URL, ?schema=NAME to use a schema of its own (or a SQLite file) [default: --db]', helpValue: '<url|file>' }),
    merge: Flags.boolean({ description: 'Accept a target that holds records: copy only what it lacks, change nothing it has', default: false }),
    yes: yesFlag,
    'dry-run': dryRunFlag,
    'batch-size': Flags.integer({ description: 'Tokens read, written (one target transaction) and verified per step', default: DEFAULT_BATCH_SIZE, min: 1, helpValue: '<n>' }),
  };

  async run(): Promise<MigrateResult | SchemaMigrateResult> {
    const f = this.flags;
    const to = f.to ?? f.db;
    if (!to) throw new CliError('name the store to copy into with --to (or --db / TOKENCTL_DB)', EXIT.usage, 'usage', 'e.g. --to "postgres://user@host/db?schema=tokenctl"');
    if (f.from === undefined) return this.migrateSchema(to);
    if (sameLocation(f.from, to)) throw new CliError(`--from and --to name the same store: ${to}`, EXIT.usage, 'usage');
    if (storeKindOf(f.from).isFile && !existsSync(f.from)) {
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
    } finally {
      await Promise.all(stores.map((s) => s.close().catch(() => undefined)));
    }
  }

  /**
   * Opening a store applies its pending migrations (a newer release's expand steps are left as
   * they are). Never a new store: only a copy (--from) creates one here (contract 4).
   */
  private async migrateSchema(location: string): Promise<SchemaMigrateResult> {
    const { openStore } = await import('../store/open-store.js');
    const store = await openStore(location, { create: false }).catch((error: unknown) => {
      // The generic answer would say that migrate --to creates a store, which is true only with --from.
      if (!(error instanceof NoStoreError)) throw error;
      throw new CliError(error.message, EXIT.noStore, 'no_store', `without --from, migrate only brings an existing store's schema up to date; to fill a new store with a copy, add --from <file|url>`);
    });
    try {
      const result = { store: store.location, schema_version: await store.schemaVersion() };
      if (!this.jsonEnabled()) this.log(`${result.store}: schema version ${result.schema_version}`);
      return result;
    } finally {
      await store.close().catch(() => undefined);
    }
  }

  private async migrate(source: TokenStore, target: TokenStore): Promise<MigrateResult> {
    const f = this.flags;
    const plan = await planMigration(source, target, { merge: f.merge });
    let report = plannedReport(plan.source);
    if (!f['dry-run']) {
      await confirmOrStop(migrateQuestion(plan.source, target.location), { yes: f.yes, declined: 'Nothing copied' });
      const line = this.jsonEnabled() ? undefined : (done: number, total: number) => `tokens: ${done}/${total}`;
      const options = { actor: this.actor(), merge: f.merge, batchSize: f['batch-size'], now: plan.now };
      report = await interruptible(line, (controls) => migrateStore(source, target, { ...options, ...controls }));
    }
    const result = migrateResult(plan.source, plan.target, f['dry-run'], f.merge, report);
    if (!this.jsonEnabled()) this.log(renderMigrate(result));
    if (result.interrupted) process.exitCode = EXIT.interrupted;
    return result;
  }
}

/** Paths compared as absolute paths, URLs as written (the stores compare their locations again). */
function sameLocation(a: string, b: string): boolean {
  if (!storeKindOf(a).isFile || !storeKindOf(b).isFile) return a === b;
  return resolve(a) === resolve(b);
}
