import type { Trail } from '../trail.js';
import { TOKEN_TYPES, type StoreStats, type TokenState, type TokenType } from '../store.js';
import { countedAuditParams, PURGEABLE_SQL, PURGE_AUDIT, PURGE_GRANTS, STATS } from './statements.js';
import { purgeBatch } from './writes.js';
import { PostgresTokenWrites } from './token-writes.js';
import type { MaintenanceStore } from '../store.js';

/** The PostgreSQL store's purges and counts (ports/maintenance.ts). */
export abstract class PostgresMaintenanceStore extends PostgresTokenWrites implements MaintenanceStore {
  async purgeBatch(before: number, batchSize: number, trail: Trail): Promise<number> {
    const { audit } = trail;
    return purgeBatch(this.db, this.purgeScan, before, batchSize, audit);
  }

  async countPurgeable(before: number): Promise<number> {
    return (await this.db.query<{ n: number }>(`SELECT count(*) AS n FROM tokens WHERE ${PURGEABLE_SQL}`, [before])).rows[0]?.n ?? 0;
  }

  async purgeGrantsBatch(before: number, after: string | null, batchSize: number, trail: Trail): Promise<{ deleted: number; next: string | null }> {
    const limit = Math.max(1, batchSize);
    const params = [before, after ?? '', limit, ...countedAuditParams(trail.audit)];
    const row = (await this.db.query<{ n: number; scanned: number; last: string | null }>(PURGE_GRANTS, params)).rows[0];
    return { deleted: row?.n ?? 0, next: row !== undefined && row.scanned >= limit ? row.last : null };
  }

  async purgeAuditBatch(before: number, batchSize: number, trail: Trail): Promise<number> {
    const params = [before, Math.max(1, batchSize), ...countedAuditParams(trail.audit)];
    return (await this.db.query<{ n: number }>(PURGE_AUDIT, params)).rows[0]?.n ?? 0;
  }

  async countAuditBefore(before: number): Promise<number> {
    return (await this.db.query<{ n: number }>('SELECT count(*) AS n FROM audit WHERE at < $1', [before])).rows[0]?.n ?? 0;
  }

  async stats(now: number, clientId?: string): Promise<StoreStats> {
    type Row = { clients: number; oldestExpiredAt: number | null; byState: { type: TokenType; state: TokenState; n: number }[] };
    const row = (await this.db.query<Row>(STATS, [now, clientId ?? null])).rows[0];
    const tokens = Object.fromEntries(TOKEN_TYPES.map((type) => [type, { active: 0, expired: 0, revoked: 0 }])) as StoreStats['tokens'];
    for (const s of row?.byState ?? []) tokens[s.type][s.state] = s.n;
    return { clients: row?.clients ?? 0, tokens, oldestExpiredAt: row?.oldestExpiredAt ?? null };
  }
}
