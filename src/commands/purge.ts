import { Flags } from '@oclif/core';
import { BaseCommand } from '../cli/base-command.js';
import { DEFAULT_AUDIT_RETENTION_MS, dryRunFlag, durationFlag, retentionFlag, yesFlag } from '../cli/flags.js';
import { EXIT } from '../cli/errors.js';
import { interruptible } from '../cli/progress.js';
import { confirmOrStop } from '../cli/prompts.js';
import { progressLine, purgeQuestion, renderPurge } from '../cli/render/purge.js';
import type { PurgeCommandResult } from '../cli/render/results.js';

export default class Purge extends BaseCommand<typeof Purge> {
  static override summary = 'Delete tokens that expired or were revoked longer ago than a duration, the grants left empty, and old audit lines';
  static override description = `Counts what qualifies, asks for confirmation (without a terminal it refuses unless --yes), then deletes with exactly the cut-offs it asked about (a token that passes one while the prompt waits stays for the next purge), in batches so that a server using the same store is never held up for long. Active tokens are never purged. Each batch writes its audit line in its own transaction, so the audit trail holds exactly what was deleted.

Then it deletes the grant records no token is left in (PostgreSQL keeps them apart from the tokens), and the audit lines written longer ago than --audit-older-than (400 days unless told: over a year of history for a yearly review; "never" keeps them all). Run it daily (a systemd timer, a Kubernetes CronJob); see docs/operations.md for giving the disk space back.

Ctrl-C or SIGTERM stops it after the batch under way: it prints "Purge interrupted: 4,700 of 35,004 deleted", audits it, and exits 130. Run it again to finish.`;

  static override examples = [
    { description: 'Every expired or revoked token', command: '<%= config.bin %> <%= command.id %> --yes' },
    { description: 'Keep a week of history; see first what would go', command: '<%= config.bin %> <%= command.id %> --older-than 7d --dry-run' },
    { description: 'Keep the audit trail for 90 days only', command: '<%= config.bin %> <%= command.id %> --audit-older-than 90d --yes' },
  ];

  static override flags = {
    'older-than': durationFlag({ description: 'Only tokens expired or revoked longer ago than this, e.g. 7d', default: 0, defaultHelp: async () => '0s' }),
    'audit-older-than': retentionFlag({
      description: 'The audit trail\'s retention: delete its lines written longer ago than this (at least 1d), or "never"',
      default: DEFAULT_AUDIT_RETENTION_MS,
      defaultHelp: async () => '400d',
    }),
    yes: yesFlag,
    'dry-run': dryRunFlag,
    'batch-size': Flags.integer({ description: 'Tokens deleted per store transaction', default: 1000, min: 1, helpValue: '<n>' }),
  };

  async run(): Promise<PurgeCommandResult> {
    const f = this.flags;
    const olderThanMs = f['older-than'];
    const engine = await this.engine();
    const auditOlderThanMs = f['audit-older-than'] ?? undefined;
    const { before, purgeable } = await engine.planPurge(olderThanMs);
    const auditPurgeable = auditOlderThanMs === undefined ? 0 : await engine.countAuditOlderThan(auditOlderThanMs);
    const auditBefore = auditOlderThanMs === undefined ? null : Date.now() - auditOlderThanMs;
    let result: PurgeCommandResult = {
      store: engine.store.location, older_than_ms: olderThanMs, before, purgeable, deleted: 0, elapsed_ms: 0, dry_run: f['dry-run'],
      grants_deleted: 0, audit_older_than_ms: auditOlderThanMs ?? null, audit_before: auditBefore, audit_purgeable: auditPurgeable, audit_deleted: 0,
    };
    if (!result.dry_run) {
      // Grants left empty by earlier purges go too, without a question: nothing can use them.
      if (purgeable > 0 || auditPurgeable > 0) {
        const audit = auditBefore === null ? undefined : { count: auditPurgeable, before: auditBefore };
        await confirmOrStop(purgeQuestion(purgeable, result.before, audit), { yes: f.yes, declined: 'Nothing purged' });
      }
      const line = this.jsonEnabled() ? undefined : (n: number) => progressLine(n, Math.max(n, purgeable));
      const purged = await interruptible(line, ({ signal, onProgress }) =>
        engine.purge({ olderThanMs, before, auditOlderThanMs, auditBefore: auditBefore ?? undefined, batchSize: f['batch-size'], onProgress, signal, planned: purgeable }, this.actor()),
      );
      result = { ...result, deleted: purged.deleted, before: purged.before, elapsed_ms: purged.elapsed_ms, interrupted: purged.interrupted, grants_deleted: purged.grants_deleted, audit_deleted: purged.audit_deleted };
    }
    if (!this.jsonEnabled()) this.log(renderPurge(result));
    if (result.interrupted) process.exitCode = EXIT.interrupted;
    return result;
  }
}
