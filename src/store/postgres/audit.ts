import type { AuditEntry, AuditFilter } from '../store.js';
import { auditParams, INSERT_AUDIT, LIST_AUDIT, COUNT_AUDIT } from './statements.js';
import { PostgresMaintenanceStore } from './maintenance.js';
import type { AuditStore } from '../store.js';

/** The PostgreSQL store's audit trail (ports/audit.ts). */
export abstract class PostgresAuditStore extends PostgresMaintenanceStore implements AuditStore {
  async appendAudit(e: AuditEntry): Promise<void> {
    await this.db.query(INSERT_AUDIT, auditParams(e));
  }

  async listAudit(filter: AuditFilter): Promise<AuditEntry[]> {
    const { beforeId = null, limit = null } = filter;
    return (await this.db.query<AuditEntry>(LIST_AUDIT, [...auditFilterParams(filter), beforeId, limit])).rows;
  }

  async countAudit(filter: Omit<AuditFilter, 'beforeId' | 'limit'>): Promise<number> {
    return (await this.db.query<{ n: number }>(COUNT_AUDIT, auditFilterParams(filter))).rows[0]!.n;
  }
}

/** An audit filter as COUNT_AUDIT's $1–$4 (LIST_AUDIT's first four). */
function auditFilterParams(filter: AuditFilter): unknown[] {
  const { since = null, jti = null, clientId = null, hideActions } = filter;
  return [since, jti, clientId, hideActions === undefined || hideActions.length === 0 ? null : [...hideActions]];
}
