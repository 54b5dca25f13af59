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
  'token.revoke': 'one token revoked (a refresh token with its grant)',
  'token.revoke_grant': 'a replaced refresh token presented for revocation: its grant ended',
  'token.reuse_detected': 'a replaced refresh token presented for refresh: its grant ended (RFC 9700 §4.14.2)',
  'token.revoke_bulk': "a batch of an operator's bulk revocation, or its summary when nothing was revoked",
  'token.revoke_bulk_interrupted': 'a bulk revocation stopped part way: how many it revoked',
  purge: 'a batch of expired and revoked tokens deleted',
  'purge.interrupted': 'a purge stopped part way: how many it deleted',
  'purge.grants': 'a batch of grant records with no token left deleted',
  'purge.audit': 'a batch of audit lines older than the retention deleted',
  'receiver.add': 'a receiver of security events registered',
  'receiver.remove': 'a receiver and its deliveries removed',
  'receiver.retry': "a receiver's dead letters requeued",
  'signing_key.rotate': 'a new key to sign security events with; the old one retired',
} as const satisfies Record<string, string>;

export type AuditAction = keyof typeof AUDIT_ACTIONS;

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
