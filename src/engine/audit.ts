import type { AuditEntry, AuditFilter, AuditStore } from '../store/store.js';
import type { EngineContext } from './context.js';

/** The store ports this module uses (store/ports/). */
type Ports = AuditStore;

/**
 * Every action the audit trail tells of (docs/operations.md, "The audit trail"), with what it
 * means. The one vocabulary: a line is built by {@link auditLine} only, so a new kind of change
 * adds its word here. (A store migrated from another keeps the words that store wrote.)
 */
export const AUDIT_ACTIONS = {
  'client.create': 'a client registered',
  'client.delete': 'a client and its tokens deleted',
  'client.rotate_secret': "a client's secret replaced",
  'client.update': "a client's redirect URIs, grant types or login-provider mark changed",
  'grant.authorize': 'a user logged in through the authorization code flow: a new grant (RFC 6749 §4.1)',
  'grant.code_replayed': 'an authorization code presented again: the grant it formed ended (RFC 6749 §4.1.2)',
  'token.revoke': 'one token revoked (a refresh token with its grant)',
  'token.revoke_grant': 'a replaced refresh token presented for revocation: its grant ended',
  'token.reuse_detected': 'a replaced refresh token presented for refresh: its grant ended (RFC 9700 §4.14.2)',
  'token.revoke_bulk': "an operator's bulk revocation, one line once it is done: how many it revoked in all",
  'token.revoke_bulk.batch': 'one batch of a bulk revocation, written with it (detail: audit --batches)',
  'token.revoke_bulk_interrupted': 'a bulk revocation stopped part way: how many it revoked',
  purge: 'a purge, one line once it is done: how many it deleted in all',
  'purge.batch': 'one batch of a purge, written with it (detail: audit --batches)',
  'purge.interrupted': 'a purge stopped part way: how many it deleted',
  'purge.grants': 'a batch of grant records with no token left deleted',
  'purge.audit': 'a batch of audit lines older than the retention deleted',
  'receiver.add': 'a receiver of security events registered',
  'receiver.remove': 'a receiver and its deliveries removed',
  'receiver.update': "a receiver's settings changed: its retention by an operator, or its SSF stream (events, endpoint, status) by its client",
  'receiver.retry': "a receiver's dead letters requeued",
  'signing_key.rotate': 'a new key to sign security events with; the old one retired',
} as const satisfies Record<string, string>;

export type AuditAction = keyof typeof AUDIT_ACTIONS;

/**
 * The lines that are detail of one operation: each batch of a bulk revocation or purge, which its
 * summary line (written when the operation ends) adds up. `audit` shows them on request.
 */
export const BATCH_ACTIONS: readonly AuditAction[] = ['token.revoke_bulk.batch', 'purge.batch', 'purge.grants', 'purge.audit'];

/** What makes a line: the clock's `now`, unless the change has its own instant. */
type Clocked = Pick<EngineContext<unknown>, 'clock'>;

/**
 * One line of the audit trail, for a store to write with the change it tells of (in the change's
 * transaction), at `at` or the clock's now. Never pass a token or a secret.
 */
export function auditLine(ctx: Clocked, actor: string, action: AuditAction, target: string, count: number, detail: string, at = ctx.clock.now()): AuditEntry {
  return auditEntry(at, actor, action, target, count, detail);
}

/** {@link auditLine} at a given instant, for code that holds no engine context (serve's own key rotation). */
export function auditEntry(at: number, actor: string, action: AuditAction, target: string, count: number, detail: string): AuditEntry {
  return { at, actor, action, target, count, detail };
}

/** Appends one line to the audit trail, on its own. Never pass a token or a secret. */
export async function audit(
  ctx: EngineContext<Ports>,
  actor: string,
  action: AuditAction,
  target: string,
  count: number,
  detail: string,
): Promise<void> {
  await ctx.store.appendAudit(auditLine(ctx, actor, action, target, count, detail));
}

export function listAudit(ctx: EngineContext<Ports>, filter: AuditFilter): Promise<AuditEntry[]> {
  return ctx.store.listAudit(filter);
}

/** A page of the audit trail and how many lines match on every page. */
export interface AuditPage {
  entries: AuditEntry[];
  total: number;
}

/** A page of the trail, newest first; without `batches`, one line per operation (no {@link BATCH_ACTIONS}). */
export async function auditPage(ctx: EngineContext<Ports>, filter: Omit<AuditFilter, 'hideActions'> & { batches?: boolean }): Promise<AuditPage> {
  const { batches, ...rest } = filter;
  const query: AuditFilter = { ...rest, hideActions: batches ? undefined : BATCH_ACTIONS };
  const { beforeId: _page, limit: _limit, ...counted } = query;
  const [entries, total] = await Promise.all([ctx.store.listAudit(query), ctx.store.countAudit(counted)]);
  return { entries, total };
}
