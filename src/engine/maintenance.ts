import type { AuditStore, AuthorizationStore, ClientStore, DpopProofStore, MaintenanceStore, OutboxStore, StoreStats, TokenFilter, TokenReads, TokenStore } from '../store/store.js';
import { audit, auditLine } from './audit.js';
import { tokenView, type EngineContext } from './context.js';
import type { TokenView } from './results.js';
import { NotFoundError } from './errors.js';

/** The store ports this module uses (store/ports/). */
type Ports = TokenReads & Pick<ClientStore, 'getClient'> & MaintenanceStore & AuditStore & OutboxStore & Pick<AuthorizationStore, 'purgeAuthorizations'> & Pick<DpopProofStore, 'purgeDpopProofs'> & Pick<TokenStore, 'location' | 'schemaVersion'>;

export interface PurgeOptions {
  /** Delete tokens that expired or were revoked more than this long ago. */
  olderThanMs: number;
  /**
   * The cut-off itself (ms), as {@link planPurge} counted and the operator confirmed it; default
   * now − olderThanMs. A purge run seconds after its prompt must not delete what expired since.
   */
  before?: number;
  /** Tokens deleted per store call; each call is short so a running server is never blocked long. */
  batchSize?: number;
  /** Called after each batch with the running total. */
  onProgress?: (deleted: number) => void;
  /** Aborted (Ctrl-C, SIGTERM): stop after the batch under way; the result says `interrupted`. */
  signal?: AbortSignal;
  /** How many qualified when counted, for the audit line of an interrupted purge. */
  planned?: number;
  /** The audit trail's retention: delete its lines written more than this long ago; none deleted without. */
  auditOlderThanMs?: number;
  /** The retention's cut-off itself (ms), as confirmed; default now − auditOlderThanMs. */
  auditBefore?: number;
}

export interface PurgeResult {
  deleted: number;
  /** Everything expired or revoked before this instant (ms) was deleted. */
  before: number;
  elapsed_ms: number;
  /** Stopped at a batch boundary by the signal: `deleted` is exactly what was deleted. */
  interrupted: boolean;
  /** Grant records deleted because no token of theirs was left (PostgreSQL keeps them apart). */
  grants_deleted: number;
  /** Audit lines deleted by the retention, and the instant (ms) before which they were written. */
  audit_deleted: number;
  audit_before: number | null;
}

/**
 * Deletes tokens by each token's own expiry or revocation time, in batches; then the grant
 * records left without a token; then, with a retention, the audit lines older than it. Each
 * batch writes its own audit line in its own transaction, so the trail holds exactly what was
 * deleted even if the process is killed; an interrupted purge adds a line saying so.
 */
export async function purge(ctx: EngineContext<Ports>, options: PurgeOptions, actor: string): Promise<PurgeResult> {
  const started = Date.now();
  const now = ctx.clock.now();
  const before = options.before ?? now - options.olderThanMs;
  const auditBefore = options.auditOlderThanMs === undefined ? null : (options.auditBefore ?? now - options.auditOlderThanMs);
  const batchSize = options.batchSize ?? 1000;
  const target = `before:${new Date(before).toISOString()}`;
  const line = (action: 'purge.batch' | 'purge.grants' | 'purge.audit', at: string, batch: number) =>
    auditLine(ctx, actor, action, at, 0, `batch ${batch} of the purge started ${new Date(started).toISOString()}`);
  const result: PurgeResult = { deleted: 0, before, elapsed_ms: 0, interrupted: false, grants_deleted: 0, audit_deleted: 0, audit_before: auditBefore };
  const stopped = (): boolean => (result.interrupted ||= options.signal?.aborted === true);
  let batches = 0;

  for (let batch = 1; !stopped(); batch++) {
    const n = await ctx.store.purgeBatch(before, batchSize, { audit: line('purge.batch', target, batch) });
    if (n > 0) batches = batch;
    result.deleted += n;
    if (n > 0) options.onProgress?.(result.deleted);
    if (n < batchSize) break;
    await betweenBatches();
  }
  // Grants after their tokens: a grant whose last token this purge deleted goes in the same run.
  let after: string | null = null;
  for (let batch = 1; !stopped(); batch++) {
    const { deleted, next }: { deleted: number; next: string | null } = await ctx.store.purgeGrantsBatch(before, after, batchSize, { audit: line('purge.grants', target, batch) });
    result.grants_deleted += deleted;
    if (next === null) break;
    after = next;
    await betweenBatches();
  }
  if (auditBefore !== null) {
    const auditTarget = `audit-before:${new Date(auditBefore).toISOString()}`;
    for (let batch = 1; !stopped(); batch++) {
      const n = await ctx.store.purgeAuditBatch(auditBefore, batchSize, { audit: line('purge.audit', auditTarget, batch) });
      result.audit_deleted += n;
      if (n < batchSize) break;
      await betweenBatches();
    }
  }
  if (result.interrupted) {
    const of = options.planned === undefined ? '' : ` of ${options.planned}`;
    await audit(ctx, actor, 'purge.interrupted', target, result.deleted, `interrupted: ${result.deleted}${of} deleted`);
  } else {
    // One line for the operation, after its batches (each audited with itself).
    const beside = [
      ...(result.grants_deleted > 0 ? [`${result.grants_deleted} empty grants`] : []),
      ...(result.audit_deleted > 0 ? [`${result.audit_deleted} audit lines older than ${new Date(auditBefore!).toISOString()}`] : []),
    ];
    // A purge that found nothing leaves no line: serve's and cron's daily runs would fill the trail with them.
    if (result.deleted > 0 || beside.length > 0) {
      await audit(ctx, actor, 'purge', target, result.deleted, [`${batches} ${batches === 1 ? 'batch' : 'batches'}`, ...beside].join('; '));
    }
    await purgeEndedAuthorizations(ctx, batchSize, options.signal);
    await purgeSeenProofs(ctx, batchSize, options.signal);
  }
  return { ...result, elapsed_ms: Date.now() - started };
}

/** Lets other work (a server's requests, when run in-process) in between batches. */
function betweenBatches(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** How many audit lines a retention of `olderThanMs` would delete now. */
export function countAuditOlderThan(ctx: EngineContext<Ports>, olderThanMs: number): Promise<number> {
  return ctx.store.countAuditBefore(ctx.clock.now() - olderThanMs);
}

/**
 * The authorization requests that can no longer be used (challenge and code expired: contract 5),
 * whatever `--older-than` says: they hold nothing an operator looks back at, and the audit
 * trail keeps the logins they led to.
 */
async function purgeEndedAuthorizations(ctx: EngineContext<Ports>, batchSize: number, signal: AbortSignal | undefined): Promise<void> {
  const now = ctx.clock.now();
  while (!signal?.aborted && (await ctx.store.purgeAuthorizations(now, batchSize)) === batchSize) {
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * The DPoP proofs remembered past their window (RFC 9449 §11.1): a proof that old is refused for
 * its `iat` anyway. Each remember step deletes a few as well (store/ports/dpop-proofs.ts); this
 * empties what a quiet server left behind.
 */
async function purgeSeenProofs(ctx: EngineContext<Ports>, batchSize: number, signal: AbortSignal | undefined): Promise<void> {
  const now = ctx.clock.now();
  while (!signal?.aborted && (await ctx.store.purgeDpopProofs(now, batchSize)) === batchSize) {
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** How many tokens purge would delete (expired or revoked before `now - olderThanMs`). */
export function countPurgeable(ctx: EngineContext<Ports>, olderThanMs: number): Promise<number> {
  return ctx.store.countPurgeable(ctx.clock.now() - olderThanMs);
}

/** What a purge of `olderThanMs` would delete now: its cut-off, fixed here, and how many qualify. */
export interface PurgePlan {
  before: number;
  purgeable: number;
}

/** Fixes a purge's cut-off and counts what it covers, so that the purge confirmed is the one run (pass `before` on). */
export async function planPurge(ctx: EngineContext<Ports>, olderThanMs: number): Promise<PurgePlan> {
  const before = ctx.clock.now() - olderThanMs;
  return { before, purgeable: await ctx.store.countPurgeable(before) };
}

/** How many tokens match the filter (limit and cursor aside), judged now. */
export function countTokens(ctx: EngineContext<Ports>, filter: Omit<TokenFilter, 'now'>): Promise<number> {
  return ctx.store.countTokens({ ...filter, now: ctx.clock.now() });
}

/**
 * The tokens that match, newest first. A first page with none for a client that does not exist
 * is NotFoundError, as `revoke --client` has it: a mistyped client id must not read as a client
 * without tokens (a deleted client's tokens went with it).
 */
export async function listTokens(ctx: EngineContext<Ports>, filter: Omit<TokenFilter, 'now'>): Promise<TokenView[]> {
  const now = ctx.clock.now();
  const records = await ctx.store.listTokens({ ...filter, now });
  if (records.length === 0 && filter.clientId !== undefined && filter.after === undefined && !(await ctx.store.getClient(filter.clientId))) {
    throw new NotFoundError(`no client with id "${filter.clientId}" (see: tokenctl client list)`);
  }
  return records.map((r) => tokenView(r, now));
}

/** `tokenctl status`: where the store is and what it holds. */
export interface StatusReport {
  store: string;
  schema_version: number;
  clients: number;
  tokens: StoreStats['tokens'];
  /** Expiry (ms) of the oldest expired token not yet purged, or null. */
  oldest_expired_at: number | null;
  events: EventsStatus;
}

/**
 * The security events' receivers and what waits for them, over every receiver (docs/events.md): the
 * outbox keeps each event until the slowest receiver has it, so a receiver that stopped polling
 * or a push endpoint that is gone shows here first (`tokenctl receiver list` has the detail).
 */
export interface EventsStatus {
  receivers: number;
  /** Deliveries not yet delivered (push) or acknowledged (poll). */
  pending: number;
  /** Push deliveries given up on after their retries. */
  dead: number;
  /** When the oldest pending delivery's event happened (ms), or null. */
  oldest_pending_at: number | null;
  /** The lag past which a receiver is behind (ms; the `--event-lag-warning` setting). */
  lag_warning_ms: number;
  /** The receivers behind: their oldest pending delivery older than the lag, or dead letters. */
  behind: string[];
}

export async function status(ctx: EngineContext<Ports>): Promise<StatusReport> {
  const [stats, version, receivers] = await Promise.all([ctx.store.stats(ctx.clock.now()), ctx.store.schemaVersion(), ctx.store.listReceivers()]);
  const now = ctx.clock.now();
  const lag = ctx.config.eventLagWarningMs;
  const events: EventsStatus = { receivers: receivers.length, pending: 0, dead: 0, oldest_pending_at: null, lag_warning_ms: lag, behind: [] };
  for (const r of receivers) {
    if (r.dead > 0 || (r.oldestPendingAt !== null && now - r.oldestPendingAt > lag)) events.behind.push(r.id);
    events.pending += r.pending;
    events.dead += r.dead;
    if (r.oldestPendingAt !== null && (events.oldest_pending_at === null || r.oldestPendingAt < events.oldest_pending_at)) events.oldest_pending_at = r.oldestPendingAt;
  }
  return { store: ctx.store.location, schema_version: version, clients: stats.clients, tokens: stats.tokens, oldest_expired_at: stats.oldestExpiredAt, events };
}
