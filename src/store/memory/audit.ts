import type { AuditEntry, AuditFilter } from '../store.js';
import { MemoryMaintenanceStore } from './maintenance.js';
import type { AuditStore } from '../store.js';

/** The in-memory store's audit trail (ports/audit.ts). */
export abstract class MemoryAuditStore extends MemoryMaintenanceStore implements AuditStore {
  async appendAudit(entry: AuditEntry): Promise<void> {
    this.appendAuditNow(entry);
  }

  async listAudit(filter: AuditFilter): Promise<AuditEntry[]> {
    this.check();
    const out = this.matchingAudit(filter)
      .filter((e) => filter.beforeId === undefined || e.id! < filter.beforeId)
      .reverse();
    return (filter.limit === undefined ? out : out.slice(0, filter.limit)).map((e) => ({ ...e }));
  }

  async countAudit(filter: Omit<AuditFilter, 'beforeId' | 'limit'>): Promise<number> {
    this.check();
    return this.matchingAudit(filter).length;
  }

  private matchingAudit(filter: AuditFilter): AuditEntry[] {
    return this.auditLog
      .filter((e) => filter.since === undefined || e.at >= filter.since)
      .filter((e) => filter.jti === undefined || e.target.split(' ').includes(filter.jti))
      .filter((e) => filter.clientId === undefined || e.actor === filter.clientId || e.target.split(' ').includes(`client:${filter.clientId}`))
      .filter((e) => !filter.hideActions?.includes(e.action));
  }
}
