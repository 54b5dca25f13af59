import { Flags } from '@oclif/core';
import { BaseCommand } from '../cli/base-command.js';
import { durationFlag, limitFlag } from '../cli/flags.js';
import { renderAudit } from '../cli/render/audit.js';
import type { AuditEntry } from '../cli/render/results.js';
import { color } from '../cli/render/style.js';

const DEFAULT_LIMIT = 50;

export default class Audit extends BaseCommand<typeof Audit> {
  static override storeUse = 'read' as const;
  static override summary = 'Show the audit trail: who revoked, purged, created or deleted what';
  static override description = `Newest first. Each line names the actor (a client id, cli:<os user>, or serve:<node> for serve's own signing-key rotation), the action, its target and how many tokens or clients it changed. Tokens and secrets are never recorded. --json exports the entries as one JSON array.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> --since 1d',
    { description: 'Everything done to one client, exported', command: '<%= config.bin %> <%= command.id %> --client web-shop-1a2b3c4d --limit 10000 --json > audit.json' },
  ];

  static override flags = {
    since: durationFlag({ description: 'Only entries of the last DURATION, e.g. 24h' }),
    jti: Flags.string({ description: 'Only entries about this token' }),
    client: Flags.string({ char: 'c', description: 'Only entries about this client' }),
    limit: limitFlag(`Show at most this many, newest first [default: ${DEFAULT_LIMIT}]`),
  };

  async run(): Promise<AuditEntry[]> {
    const f = this.flags;
    const limit = f.limit ?? DEFAULT_LIMIT;
    const now = Date.now();
    const entries = await (await this.engine()).audit({
      since: f.since === undefined ? undefined : now - f.since,
      jti: f.jti,
      clientId: f.client,
      limit,
    });
    if (!this.jsonEnabled()) {
      this.log(renderAudit(entries, now));
      if (entries.length === limit) this.logToStderr(color.dim(`Showing the newest ${limit}; there may be more (--limit N).`));
    }
    return entries;
  }
}
