import { Flags } from '@oclif/core';
import { BaseCommand } from '../cli/base-command.js';
import { CliError, EXIT } from '../cli/errors.js';
import { durationFlag, limitFlag } from '../cli/flags.js';
import { renderAudit, renderAuditFooter } from '../cli/render/audit.js';
import type { AuditEntry } from '../cli/render/results.js';

const DEFAULT_LIMIT = 50;

/** `audit --json`: a page, as `token list` gives one. */
export interface AuditResult {
  entries: AuditEntry[];
  /** How many lines match the filters, on every page. */
  total: number;
  /** Pass as --cursor for the next page; null on the last one. */
  next_cursor: string | null;
}

export default class Audit extends BaseCommand<typeof Audit> {
  static override storeUse = 'read' as const;
  static override summary = 'Show the audit trail: who revoked, purged, created or deleted what';
  static override description = `Newest first, a page at a time (--limit, default ${DEFAULT_LIMIT}), with the total that match. Each line names the actor (a client id, cli:<os user>, or serve:<node> for serve's own signing-key rotation), the action, its target and how many tokens or clients it changed. Tokens and secrets are never recorded.

A bulk revocation or a purge is one line, written when it ends, with its total (token.revoke_bulk, purge; or token.revoke_bulk_interrupted, purge.interrupted). Each of its batches has a line of its own too, written in the batch's transaction: --batches shows them (token.revoke_bulk.batch, purge.batch). A process killed outright leaves its batches without the summary line: --batches shows what it did.

The next page: pass the cursor the previous page ended with (--json: next_cursor; otherwise printed on stderr) as --cursor, with the same filters.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> --since 1d',
    { description: 'Every batch of the bulk work too', command: '<%= config.bin %> <%= command.id %> --since 1d --batches' },
    { description: 'Everything done to one client, exported a page at a time', command: '<%= config.bin %> <%= command.id %> --client web-shop-1a2b3c4d --limit 1000 --json' },
  ];

  static override flags = {
    since: durationFlag({ description: 'Only entries of the last DURATION, e.g. 24h' }),
    jti: Flags.string({ description: 'Only entries about this token' }),
    client: Flags.string({ char: 'c', description: 'Only entries about this client' }),
    batches: Flags.boolean({ description: 'Also the line of each batch of a bulk revocation or purge', default: false }),
    limit: limitFlag(`Show at most this many, newest first [default: ${DEFAULT_LIMIT}]`),
    cursor: Flags.string({ description: 'Continue after the page that printed this cursor', helpValue: '<cursor>' }),
  };

  async run(): Promise<AuditResult> {
    const f = this.flags;
    const limit = f.limit ?? DEFAULT_LIMIT;
    const now = Date.now();
    const { entries, total } = await (await this.engine()).auditPage({
      since: f.since === undefined ? undefined : now - f.since,
      jti: f.jti,
      clientId: f.client,
      batches: f.batches,
      beforeId: f.cursor === undefined ? undefined : decodeCursor(f.cursor),
      limit,
    });
    const last = entries.at(-1);
    const result: AuditResult = { entries, total, next_cursor: entries.length === limit && last?.id !== undefined ? encodeCursor(last.id) : null };
    if (!this.jsonEnabled()) {
      this.log(renderAudit(entries, now));
      this.logToStderr(renderAuditFooter(entries.length, total, result.next_cursor, f.cursor !== undefined));
    }
    return result;
  }
}

/** A cursor names the last line of a page by its id, base64url. */
function encodeCursor(id: number): string {
  return Buffer.from(`audit:${id}`).toString('base64url');
}

function decodeCursor(cursor: string): number {
  const m = /^audit:(\d{1,15})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!m) throw new CliError(`--cursor ${cursor} is not a cursor that audit printed`, EXIT.usage, 'usage', 'pass next_cursor from the previous page as it was printed');
  return Number(m[1]);
}
