import type { AuditEntry, AuditFilter } from '../store.js';
import { SqliteMaintenanceStore } from './maintenance.js';
import type { AuditStore } from '../store.js';

/** The SQLite store's audit trail (ports/audit.ts). */
export abstract class SqliteAuditStore extends SqliteMaintenanceStore implements AuditStore {
  async appendAudit(entry: AuditEntry): Promise<void> {
    await this.write(() => this.st.insertAudit.run(entry));
  }

  async listAudit(filter: AuditFilter): Promise<AuditEntry[]> {
    const { beforeId = null, limit = -1 } = filter;
    return this.run(() => this.st.listAudit.all({ ...auditParams(filter), beforeId, limit }) as AuditEntry[]);
  }

  async countAudit(filter: Omit<AuditFilter, 'beforeId' | 'limit'>): Promise<number> {
    return this.run(() => (this.st.countAudit.get(auditParams(filter)) as { n: number }).n);
  }
}

/** An audit filter's named parameters (statements.ts AUDIT_CONDITIONS). */
function auditParams(filter: AuditFilter): Record<string, string | number | null> {
  const { since = null, jti = null, clientId = null, hideActions } = filter;
  return { since, jti, clientId, hide: hideActions === undefined || hideActions.length === 0 ? null : JSON.stringify(hideActions) };
}
