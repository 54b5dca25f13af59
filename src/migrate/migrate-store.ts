import {
  DuplicateClientError,
  TOKEN_TYPES,
  type AuditEntry,
  type ClientRecord,
  type StoreStats,
  type TokenRecord,
  type TokenStore,
} from '../store/store.js';
import { copyEvents, type EventsCopy } from './copy-events.js';
import { MigrateError } from './errors.js';
import { MIGRATE_ACTION, tokenTotal } from './plan.js';
import { byKey, differingFields, noCounts, Verifier, type CopyCounts } from './verify.js';

export { MigrateError, type MigrateErrorCode } from './errors.js';
export { MIGRATE_ACTION, planMigration, type MigrationPlan, type StoreContents } from './plan.js';
export type { CopyCounts } from './verify.js';
export type { EventsCopy } from './copy-events.js';

/*
 * Copying one store into another (`tokenctl migrate`), typically a SQLite file into PostgreSQL
 * when one node is no longer enough. Only the TokenStore interface is used, so any store can be
 * copied into any other, and every record arrives with every field: token digests (the tokens
 * themselves were never stored, so the copied digests are what keeps issued tokens working),
 * revoked and replaced state, secret hashes and times.
 *
 * Tokens are read a page at a time (`scanTokens`, the source's jti order), written as one batch,
 * and read back from the target by jti to verify them: memory holds one page, not the store.
 */

/** Tokens per page: one read of the source, one `insertTokens` transaction, the unit of progress. */
export const DEFAULT_BATCH_SIZE = 5000;

export interface MigrationReport {
  clients: CopyCounts;
  tokens: CopyCounts;
  audit: CopyCounts;
  /** Source records read back from the target field for field identical (clients and tokens). */
  verified: number;
  /**
   * With merge: the first records (up to {@link MAX_LISTED}) the target already held in another
   * version, e.g. `token <jti>: revokedAt`, so that an operator can check which store is right.
   */
  differences: string[];
  elapsedMs: number;
  /**
   * Security events (docs/events.md): receivers and signing keys copied, deliveries not
   * (copy-events.ts). Absent from an interrupted run's report (they are copied after the tokens).
   */
  events?: EventsCopy;
  /** Stopped by the signal at a batch boundary: `tokens.source` of the source's tokens were handled. */
  interrupted?: boolean;
}

export interface MigrateOptions {
  /** Who migrates, for the audit line left in the target (`cli:<os user>`). */
  actor: string;
  /**
   * Accept a target that holds records already: copy only what it lacks, and never change what
   * it has. Resumes an interrupted migration; a second run copies nothing.
   */
  merge?: boolean;
  /** Tokens per insert transaction (default {@link DEFAULT_BATCH_SIZE}). */
  batchSize?: number;
  /** The instant the source's counts are judged at (default now). */
  now?: number;
  /** Called after every batch with the tokens handled so far. */
  onProgress?: (done: number, total: number) => void;
  /**
   * Aborted (Ctrl-C, SIGTERM): stop after the batch under way, leave an audit line in the target
   * saying how far it got, and return with `interrupted` (a run with `merge` completes it).
   */
  signal?: AbortSignal;
}

/**
 * Copies clients, tokens and the audit trail from `source` into `target`, verifies that every
 * source record reads back identical from the target, and leaves one audit line there. Call
 * {@link planMigration} first. Nothing in the source is changed.
 *
 * Not one transaction (the interface has none that spans stores): an interrupted run leaves a
 * partial target, which a run with `merge` completes. The source must not change meanwhile
 * (stop the servers on it): its counts are compared before and after, and a difference is
 * reported as `source_changed`.
 */
export async function migrateStore(source: TokenStore, target: TokenStore, options: MigrateOptions): Promise<MigrationReport> {
  const started = Date.now();
  const now = options.now ?? started;
  const merge = options.merge ?? false;
  const batchSize = Math.max(1, options.batchSize ?? DEFAULT_BATCH_SIZE);
  const [before, sourceAudit] = await Promise.all([source.stats(now), source.listAudit({})]);
  const total = tokenTotal(before);

  const clients = await copyClients(source, target, merge);
  const tokens = noCounts();
  const verify = new Verifier(target.location);
  // One page of the source at a time, in its own jti order: memory holds a page, not a store.
  // The target is asked for the same jtis (not a range: its order may differ from the source's).
  for (let after: string | null = null; ; ) {
    if (options.signal?.aborted) return interrupted(target, source, options.actor, clients.counts, tokens, total, started);
    const page = await source.scanTokens(after, batchSize);
    if (page.length === 0) break;
    after = page[page.length - 1]!.jti;
    const jtis = page.map((t) => t.jti);
    // Only with merge can the target hold tokens already (planMigration refused it otherwise).
    const existing = merge ? byKey(await target.findTokensByJti(jtis), (t) => t.jti) : new Map<string, TokenRecord>();
    const missing = page.filter((t) => !existing.has(t.jti));
    if (missing.length > 0) await target.insertTokens(missing);
    const copies = byKey(await target.findTokensByJti(jtis), (t) => t.jti);
    for (const t of page) verify.check(`token ${t.jti}`, t, copies.get(t.jti), existing.has(t.jti), tokens);
    tokens.source += page.length;
    tokens.copied += missing.length;
    options.onProgress?.(tokens.source, total);
  }
  const afterClients = byKey(await target.listClients(), (c) => c.id);
  for (const c of clients.records) verify.check(`client ${c.id}`, c, afterClients.get(c.id), clients.preexisting.has(c.id), clients.counts);
  const events = await copyEvents(source, target, verify);
  verify.throwIfFailed();

  const audit = await copyAudit(sourceAudit, target, merge);

  // A writer on the source meanwhile would have been half copied: say so rather than succeed.
  const [afterStats, afterAudit] = await Promise.all([source.stats(now), source.listAudit({ limit: 1 })]);
  if (tokens.source !== total || !sameStats(before, afterStats) || afterAudit[0]?.id !== sourceAudit[0]?.id) {
    throw new MigrateError(
      'source_changed',
      `the source ${source.location} changed while it was being copied (a server or command still writes to it): the target may lack its latest changes`,
      'stop every server and command using the source, empty the target (drop its schema, or delete its file) and run again: --merge would keep stale copies of the tokens that changed',
    );
  }

  const report: MigrationReport = {
    clients: clients.counts,
    tokens,
    audit,
    verified: verify.identical,
    differences: verify.differences,
    elapsedMs: Date.now() - started,
    events,
  };
  await target.appendAudit({
    at: Date.now(),
    actor: options.actor,
    action: MIGRATE_ACTION,
    target: 'store',
    count: clients.counts.copied + tokens.copied,
    detail: `from ${source.location}: ${clients.counts.copied} clients, ${tokens.copied} tokens, ${audit.copied} audit entries copied${eventsDetail(events)}${merge ? ' (merge)' : ''}`,
  });
  return report;
}

/** The end of an interrupted migration: what was copied, in the report and in the target's trail. */
async function interrupted(
  target: TokenStore,
  source: TokenStore,
  actor: string,
  clients: CopyCounts,
  tokens: CopyCounts,
  total: number,
  started: number,
): Promise<MigrationReport> {
  await target.appendAudit({
    at: Date.now(),
    actor,
    action: `${MIGRATE_ACTION}.interrupted`,
    target: 'store',
    count: clients.copied + tokens.copied,
    detail: `interrupted: from ${source.location}: ${clients.copied} clients, ${tokens.copied} of ${total} tokens copied; the audit trail not yet (run again with --merge to finish)`,
  });
  const none = noCounts();
  return { clients, tokens, audit: none, verified: 0, differences: [], elapsedMs: Date.now() - started, interrupted: true };
}

/**
 * Clients first: every token references one. Each is copied whole (its redirect URIs, grant types
 * and login-provider mark too). The authorization code flow's requests are not copied: each lives
 * ten minutes at most (contract 5), and a login under way when the servers were stopped for the
 * migration starts again.
 */
async function copyClients(source: TokenStore, target: TokenStore, merge: boolean) {
  const records = await source.listClients();
  const existing = merge ? byKey(await target.listClients(), (c) => c.id) : new Map<string, ClientRecord>();
  const preexisting = new Set<string>();
  const counts = noCounts(records.length);
  for (const client of records) {
    if (existing.has(client.id)) {
      preexisting.add(client.id);
      continue;
    }
    try {
      await target.createClient(client, {});
      counts.copied++;
    } catch (error) {
      // Only with merge can a client appear meanwhile (another run); otherwise it is a conflict.
      if (!(merge && error instanceof DuplicateClientError)) throw error;
      preexisting.add(client.id);
    }
  }
  return { records, preexisting, counts };
}

/**
 * The audit trail, oldest first, so that the target lists it in the same order. Entries get the
 * target's own ids. With merge, entries the target already has (same fields) are not repeated.
 */
async function copyAudit(newestFirst: AuditEntry[], target: TokenStore, merge: boolean): Promise<CopyCounts> {
  const counts = noCounts(newestFirst.length);
  const have = new Map<string, number>();
  if (merge) for (const e of await target.listAudit({})) have.set(auditKey(e), (have.get(auditKey(e)) ?? 0) + 1);
  for (const entry of [...newestFirst].reverse()) {
    const key = auditKey(entry);
    const n = have.get(key) ?? 0;
    if (n > 0) {
      have.set(key, n - 1);
      counts.present++;
      continue;
    }
    const { id: _id, ...fields } = entry;
    await target.appendAudit(fields);
    counts.copied++;
  }
  return counts;
}

function sameStats(a: StoreStats, b: StoreStats): boolean {
  return a.clients === b.clients && TOKEN_TYPES.every((type) => differingFields(a.tokens[type], b.tokens[type]).length === 0);
}

/** The events part of the migration's audit line, when the source had any. */
function eventsDetail(e: EventsCopy): string {
  if (e.receivers.source + e.signingKeys.source === 0) return '';
  return `, ${e.receivers.copied} receivers and ${e.signingKeys.copied} signing keys (not their ${e.deliveriesNotCopied} undelivered events)`;
}

function auditKey(e: AuditEntry): string {
  return JSON.stringify([e.at, e.actor, e.action, e.target, e.count, e.detail]);
}
