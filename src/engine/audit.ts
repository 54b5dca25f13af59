import type { AuditEntry, AuditFilter } from '../store/store.js';
import type { EngineContext } from './context.js';

/** Appends one line to the audit trail. Never pass a token or a secret. */
export async function audit(
  ctx: EngineContext,
  actor: string,
  action: string,
  target: string,
  count: number,
  detail: string,
): Promise<void> {
  await ctx.store.appendAudit({ at: ctx.clock.now(), actor, action, target, count, detail });
}

export function listAudit(ctx: EngineContext, filter: AuditFilter): Promise<AuditEntry[]> {
  return ctx.store.listAudit(filter);
}
