import type { Trail } from '../trail.js';
import { DuplicateClientError, type ClientRecord, type ClientSettings } from '../store.js';
import { isUniqueViolation } from './errors.js';
import { eventParams, oneEventCtes, OUTBOX_LOCK } from './event-writes.js';
import { auditAt, auditParams, insertAudit, CLIENT_COLUMNS, INSERT_AUDIT, optionalAudit } from './statements.js';
import { PostgresStoreCore } from './store-core.js';
import type { ClientStore } from '../store.js';

/** The PostgreSQL store's clients (ports/clients.ts). */
export abstract class PostgresClientStore extends PostgresStoreCore implements ClientStore {
  async createClient(c: ClientRecord, trail: Trail): Promise<void> {
    const { audit } = trail;
    try {
      // With its audit line ($15–$21, optionalAudit) in the same statement.
      await this.db.query(
        `WITH c AS (INSERT INTO clients (id, name, secret_hash, scope, org_id, audience, access_ttl_ms, refresh_ttl_ms, created_at, secret_updated_at,
              redirect_uris, grant_types, login_provider, require_dpop)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::text[], $12::text[], $13::bool, $14::bool) RETURNING 1)
          ${insertAudit(auditAt(15), 'FROM c WHERE $21::bool')}`,
        [
          c.id, c.name, c.secretHash, c.scope, c.orgId, c.audience, c.accessTtlMs, c.refreshTtlMs, c.createdAt, c.secretUpdatedAt,
          c.redirectUris, c.grantTypes, c.loginProvider, c.requireDpop, ...optionalAudit(audit),
        ],
      );
    } catch (error) {
      if (isUniqueViolation(error, 'clients_pkey')) throw new DuplicateClientError(c.id);
      throw error;
    }
  }

  async getClient(id: string): Promise<ClientRecord | null> {
    const { rows } = await this.db.query<ClientRecord>(`SELECT ${CLIENT_COLUMNS} FROM clients WHERE id = $1`, [id]);
    return rows[0] ?? null;
  }

  async listClients(): Promise<ClientRecord[]> {
    return (await this.db.query<ClientRecord>(`SELECT ${CLIENT_COLUMNS} FROM clients ORDER BY created_at, id COLLATE "C"`)).rows;
  }

  async deleteClient(id: string, trail: Trail): Promise<boolean> {
    const { audit, event } = trail;
    return this.db.transaction(
      async (db) => {
        // Its grants' locks first, as every grant revocation takes them: a mint under way commits
        // first (and its token goes with the client), a later one finds the grant gone.
        await db.query('SELECT 1 FROM grants WHERE client_id = $1 ORDER BY grant_id FOR UPDATE', [id]);
        // Its grants go by ON DELETE CASCADE, its tokens (no foreign key: migration 6) and its
        // event with them, in the same statement.
        const deleted = await db.query<{ n: number }>(
          `WITH d AS (DELETE FROM clients WHERE id = $1 RETURNING 1), t AS (DELETE FROM tokens WHERE client_id = $1),
            ${oneEventCtes(2, 'EXISTS (SELECT 1 FROM d)')} SELECT count(*)::int AS n FROM d`,
          [id, ...eventParams(event)],
        );
        if (deleted.rows[0]?.n !== 1) return false;
        if (audit) await db.query(INSERT_AUDIT, auditParams(audit));
        return true;
      },
      { lock: OUTBOX_LOCK },
    );
  }

  async updateClientSecret(id: string, secretHash: string, at: number, trail: Trail): Promise<boolean> {
    const { audit } = trail;
    // With its audit line ($4–$10, optionalAudit) when it changed the client, in the same statement.
    const sql = `WITH u AS (UPDATE clients SET secret_hash = $1, secret_updated_at = $2 WHERE id = $3 RETURNING 1),
        a AS (${insertAudit(auditAt(4), 'FROM u WHERE $10::bool')})
      SELECT count(*)::int AS n FROM u`;
    const result = await this.db.query<{ n: number }>(sql, [secretHash, at, id, ...optionalAudit(audit)]);
    return result.rows[0]?.n === 1;
  }

  async updateClientSettings(id: string, settings: ClientSettings, trail: Trail): Promise<boolean> {
    // With its audit line ($6–$12, optionalAudit) when it changed the client, in the same statement.
    const sql = `WITH u AS (UPDATE clients SET redirect_uris = $1::text[], grant_types = $2::text[], login_provider = $3::bool, require_dpop = $5::bool
          WHERE id = $4 RETURNING 1),
        a AS (${insertAudit(auditAt(6), 'FROM u WHERE $12::bool')})
      SELECT count(*)::int AS n FROM u`;
    const params = [settings.redirectUris, settings.grantTypes, settings.loginProvider, id, settings.requireDpop, ...optionalAudit(trail.audit)];
    return (await this.db.query<{ n: number }>(sql, params)).rows[0]?.n === 1;
  }
}
