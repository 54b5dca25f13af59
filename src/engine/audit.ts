import type { AuditEntry, AuditFilter } from '../store/store.js';
import type { EngineContext } from './context.js';

/**
 * One line of the audit trail, at the clock's now, for a store to write with the change it tells
 * of (in the change's transaction). Never pass a token or a secret.
 */
export function auditLine(ctx: EngineContext, actor: string, action: string, target: string, count: number, detail: string): AuditEntry {
  return { at: ctx.clock.now(), actor, action, target, count, detail };
}

/** Appends one line to the audit trail, on its own. Never pass a token or a secret. */
export async function audit(
  ctx: EngineContext,
  actor: string,
  action: string,
  target: string,
  count: number,
  detail: string,
): Promise<void> {
  await ctx.store.appendAudit(auditLine(ctx, actor, action, target, count, detail));
}

export function listAudit(ctx: EngineContext, filter: AuditFilter): Promise<AuditEntry[]> {
  return ctx.store.listAudit(filter);
}
