import type { Trail } from '../trail.js';
import { TOKEN_TYPES, tokenState, type StoreStats } from '../store.js';
import { MemoryTokenWrites } from './token-writes.js';
import type { MaintenanceStore } from '../store.js';

/** The in-memory store's purges and counts (ports/maintenance.ts). */
export abstract class MemoryMaintenanceStore extends MemoryTokenWrites implements MaintenanceStore {
  async purgeBatch(before: number, batchSize: number, trail: Trail): Promise<number> {
    const { audit } = trail;
    this.check();
    const victims = [...this.tokens.values()].filter((t) => this.purgeable(t, before)).slice(0, batchSize);
    for (const t of victims) this.remove(t);
    if (audit && victims.length > 0) this.auditLog.push({ ...audit, count: victims.length, id: this.nextAuditId++ });
    return victims.length;
  }

  async countPurgeable(before: number): Promise<number> {
    this.check();
    return [...this.tokens.values()].filter((t) => this.purgeable(t, before)).length;
  }

  async purgeGrantsBatch(): Promise<{ deleted: number; next: string | null }> {
    this.check();
    return { deleted: 0, next: null }; // a grant here is only the id its tokens share
  }

  async purgeAuditBatch(before: number, batchSize: number, trail: Trail): Promise<number> {
    this.check();
    const victims = new Set(this.auditLog.filter((e) => e.at < before).slice(0, batchSize));
    if (victims.size === 0) return 0;
    this.auditLog = this.auditLog.filter((e) => !victims.has(e));
    if (trail.audit) this.auditLog.push({ ...trail.audit, count: victims.size, id: this.nextAuditId++ });
    return victims.size;
  }

  async countAuditBefore(before: number): Promise<number> {
    this.check();
    return this.auditLog.filter((e) => e.at < before).length;
  }

  async stats(now: number, clientId?: string): Promise<StoreStats> {
    this.check();
    const tokens = Object.fromEntries(TOKEN_TYPES.map((type) => [type, { active: 0, expired: 0, revoked: 0 }])) as StoreStats['tokens'];
    let oldestExpiredAt: number | null = null;
    for (const t of this.tokens.values()) {
      if (clientId !== undefined && t.clientId !== clientId) continue;
      const state = tokenState(t, now);
      tokens[t.type][state]++;
      if (t.expiresAt <= now && (oldestExpiredAt === null || t.expiresAt < oldestExpiredAt)) oldestExpiredAt = t.expiresAt;
    }
    return { clients: this.clients.size, tokens, oldestExpiredAt };
  }
}
