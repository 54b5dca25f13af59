import type { Trail } from '../trail.js';
import { performance } from 'node:perf_hooks';
import type { StoreStats } from '../store.js';
import { SqliteTokenWrites } from './token-writes.js';
import { letOtherWritersIn } from './store-core.js';
import type { MaintenanceStore } from '../store.js';

/** The SQLite store's purges and counts (ports/maintenance.ts). */
export abstract class SqliteMaintenanceStore extends SqliteTokenWrites implements MaintenanceStore {
  async purgeBatch(before: number, batchSize: number, trail: Trail): Promise<number> {
    const started = performance.now();
    const purged = await this.write(() => this.trail(this.st.purge.run({ before, limit: batchSize }).changes, trail));
    if (purged === batchSize) await letOtherWritersIn(started);
    return purged;
  }

  async countPurgeable(before: number): Promise<number> {
    return this.run(() => (this.st.countPurgeable.get({ before }) as { n: number }).n);
  }

  async purgeGrantsBatch(): Promise<{ deleted: number; next: string | null }> {
    return { deleted: 0, next: null }; // no grant records: a grant is the id its tokens share
  }

  async purgeAuditBatch(before: number, batchSize: number, trail: Trail): Promise<number> {
    return this.write(() => this.trail(this.st.purgeAudit.run({ before, limit: batchSize }).changes, trail));
  }

  async countAuditBefore(before: number): Promise<number> {
    return this.run(() => (this.st.countAuditBefore.get({ before }) as { n: number }).n);
  }

  async stats(now: number, clientId?: string): Promise<StoreStats> {
    return this.run(() => this.tx.stats.deferred(now, clientId));
  }
}
