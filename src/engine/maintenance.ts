import type { AuditStore, AuthorizationStore, MaintenanceStore, OutboxStore, StoreStats, TokenFilter, TokenReads, TokenStore } from '../store/store.js';
import { audit, auditLine } from './audit.js';
import { tokenView, type EngineContext } from './context.js';
import type { TokenView } from './results.js';

/** The store ports this module uses (store/ports/). */
type Ports = TokenReads & MaintenanceStore & AuditStore & OutboxStore & Pick<AuthorizationStore, 'purgeAuthorizations'> & Pick<TokenStore, 'location' | 'schemaVersion'>;

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
}

export interface PurgeResult {
  deleted: number;
  /** Everything expired or revoked before this instant (ms) was deleted. */
  before: number;
  elapsed_ms: number;
  /** Stopped at a batch boundary by the signal: `deleted` is exactly what was deleted. */
  interrupted: boolean;
}

/**
 * Deletes tokens by each token's own expiry or revocation time, in batches. Each batch writes
 * its own audit line in its own transaction, so the trail holds exactly what was deleted even
 * if the process is killed; an interrupted purge adds a line saying so.
 */
export async function purge(ctx: EngineContext<Ports>, options: PurgeOptions, actor: string): Promise<PurgeResult> {
  const started = Date.now();
  const before = options.before ?? ctx.clock.now() - options.olderThanMs;
  const batchSize = options.batchSize ?? 1000;
  const target = `before:${new Date(before).toISOString()}`;
  let deleted = 0;
  let interrupted = false;
  let batches = 0;
  for (let batch = 1; ; batch++) {
    if (options.signal?.aborted) {
      interrupted = true;
      break;
    }
    const detail = `batch ${batch} of the purge started ${new Date(started).toISOString()}`;
    const n = await ctx.store.purgeBatch(before, batchSize, { audit: auditLine(ctx, actor, 'purge.batch', target, 0, detail) });
    if (n > 0) batches = batch;
    deleted += n;
    if (n > 0) options.onProgress?.(deleted);
    if (n < batchSize) break;
    // Let other work (a server's requests, when run in-process) in between batches.
    await new Promise((resolve) => setImmediate(resolve));
  }
  if (!interrupted) await purgeEndedAuthorizations(ctx, batchSize, options.signal);
  // One line for the operation, after its batches (each audited with itself).
  if (interrupted) {
    const of = options.planned === undefined ? '' : ` of ${options.planned}`;
    await audit(ctx, actor, 'purge.interrupted', target, deleted, `interrupted: ${deleted}${of} deleted`);
  } else {
    await audit(ctx, actor, 'purge', target, deleted, `${batches} ${batches === 1 ? 'batch' : 'batches'}`);
  }
  return { deleted, before, elapsed_ms: Date.now() - started, interrupted };
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

export async function listTokens(ctx: EngineContext<Ports>, filter: Omit<TokenFilter, 'now'>): Promise<TokenView[]> {
  const now = ctx.clock.now();
  const records = await ctx.store.listTokens({ ...filter, now });
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
}

export async function status(ctx: EngineContext<Ports>): Promise<StatusReport> {
  const [stats, version, receivers] = await Promise.all([ctx.store.stats(ctx.clock.now()), ctx.store.schemaVersion(), ctx.store.listReceivers()]);
  const events: EventsStatus = { receivers: receivers.length, pending: 0, dead: 0, oldest_pending_at: null };
  for (const r of receivers) {
    events.pending += r.pending;
    events.dead += r.dead;
    if (r.oldestPendingAt !== null && (events.oldest_pending_at === null || r.oldestPendingAt < events.oldest_pending_at)) events.oldest_pending_at = r.oldestPendingAt;
  }
  return { store: ctx.store.location, schema_version: version, clients: stats.clients, tokens: stats.tokens, oldest_expired_at: stats.oldestExpiredAt, events };
}
