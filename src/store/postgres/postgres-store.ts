import type { PoolClient } from 'pg';
import {
  DuplicateClientError,
  NoStoreError,
  TOKEN_TYPES,
  type AuditEntry,
  type AuditFilter,
  type BulkSelector,
  type ClientAndToken,
  type ClientRecord,
  type MintOutcome,
  type RotateOutcome,
  type StoreStats,
  type TokenFilter,
  type TokenRecord,
  type TokenState,
  type TokenStore,
  type TokenType,
} from '../store.js';
import { Database, Rollback, withClient } from './database.js';
import { isUniqueViolation, mapPgError, redactUrl } from './errors.js';
import { identify, META_TABLE, migrate } from './migrations.js';
import { checkSchemaName, createPool, schemaFromUrl } from './pool.js';
import {
  CLIENT_COLUMNS,
  INSERT_TOKENS,
  LIST_AUDIT,
  PURGEABLE_SQL,
  PURGE_BATCH,
  REVOKE_GRANT,
  STATS,
  TOKEN_COLUMNS,
  countTokensQuery,
  listTokensQuery,
  revocableQuery,
  tokenColumns,
} from './queries.js';

export interface PostgresStoreOptions {
  /** Connections in the pool (default 10). */
  poolSize?: number;
  /**
   * Keep the store in this schema (created if missing) instead of the connection's current one.
   * The URL may name it too, as `?schema=NAME`, so that `--db` and TOKENCTL_DB can.
   */
  schema?: string;
  /** How long to wait for a connection before the store counts as unavailable (default 3 s). */
  connectionTimeoutMs?: number;
  /** Longest a statement may run (default 30 s). */
  statementTimeoutMs?: number;
  /**
   * Create the schema and tables when missing (default true). False: a schema without
   * tokenctl's tables is refused with NoStoreError, and nothing is created.
   */
  create?: boolean;
}

/**
 * The PostgreSQL {@link TokenStore}: one database shared by many server nodes and CLI commands.
 *
 * Nothing is cached and nothing is locked in the process: racing requests may arrive at
 * different nodes, so every atomic operation is one statement or one transaction whose
 * conditional UPDATE decides the race under PostgreSQL's row locks (READ COMMITTED re-checks a
 * row's conditions after waiting for a concurrent writer). An unreachable or vanished database
 * surfaces as {@link StoreUnavailableError} within the connection timeout, and the pool
 * reconnects by itself when the database is back.
 */
export class PostgresStore implements TokenStore {
  private constructor(
    private readonly db: Database,
    readonly location: string,
  ) {}

  /**
   * Connects, checks that the schema is a tokenctl store (or empty) and applies pending
   * migrations. Rejects with StoreUnavailableError, NotAStoreError or SchemaTooNewError.
   */
  static async open(url: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const inUrl = schemaFromUrl(url);
    if (options.schema !== undefined && inUrl !== undefined && options.schema !== inUrl) {
      throw new Error(`two schemas given for one store: "${inUrl}" in the URL, "${options.schema}" in the options`);
    }
    const schema = options.schema ?? inUrl;
    if (schema !== undefined) checkSchemaName(schema);
    const location = options.schema === undefined ? redactUrl(url) : `${redactUrl(url)} (schema ${options.schema})`;
    const pool = createPool(url, {
      poolSize: options.poolSize ?? 10,
      schema,
      connectionTimeoutMs: options.connectionTimeoutMs ?? 3_000,
      statementTimeoutMs: options.statementTimeoutMs ?? 30_000,
    });
    try {
      await withClient(pool, async (db) => {
        const target = schema ?? (await currentSchema(db, location));
        if (options.create === false && (await identify(db, target, location)) === 0) {
          throw new NoStoreError(location, `schema "${target}" holds no tokenctl tables (check the database name and ?schema= in the URL)`);
        }
        await migrate(db, target, location);
      });
      return new PostgresStore(new Database(pool, location), location);
    } catch (error) {
      await pool.end().catch(() => undefined);
      throw mapPgError(error, location);
    }
  }

  async schemaVersion(): Promise<number> {
    const { rows } = await this.db.query<{ value: string }>(`SELECT value FROM ${META_TABLE} WHERE key = 'schema_version'`);
    return Number(rows[0]?.value ?? 0);
  }

  // ---- clients --------------------------------------------------------------------------

  async createClient(c: ClientRecord): Promise<void> {
    try {
      await this.db.query(
        `INSERT INTO clients (id, name, secret_hash, scope, org_id, audience, access_ttl_ms, refresh_ttl_ms, created_at, secret_updated_at)
          VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
        [c.id, c.name, c.secretHash, c.scope, c.orgId, c.audience, c.accessTtlMs, c.refreshTtlMs, c.createdAt, c.secretUpdatedAt],
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

  async deleteClient(id: string): Promise<boolean> {
    // Its tokens go by ON DELETE CASCADE, in the same statement.
    return (await this.db.query('DELETE FROM clients WHERE id = $1', [id])).rowCount === 1;
  }

  async updateClientSecret(id: string, secretHash: string, at: number): Promise<boolean> {
    const result = await this.db.query('UPDATE clients SET secret_hash = $1, secret_updated_at = $2 WHERE id = $3', [secretHash, at, id]);
    return result.rowCount === 1;
  }

  // ---- tokens ---------------------------------------------------------------------------

  async insertTokens(tokens: TokenRecord[]): Promise<void> {
    if (tokens.length === 0) return;
    await this.db.query(INSERT_TOKENS, tokenColumns(tokens));
  }

  async findTokenByDigest(digest: string): Promise<TokenRecord | null> {
    const { rows } = await this.db.query<TokenRecord>(`SELECT ${TOKEN_COLUMNS} FROM tokens WHERE digest = $1`, [digest]);
    return rows[0] ?? null;
  }

  async findTokenByJti(jti: string): Promise<TokenRecord | null> {
    const { rows } = await this.db.query<TokenRecord>(`SELECT ${TOKEN_COLUMNS} FROM tokens WHERE jti = $1`, [jti]);
    return rows[0] ?? null;
  }

  async findClientAndToken(clientId: string, digest: string | null): Promise<ClientAndToken> {
    // One round trip, one snapshot: each row as JSON under the record's own field names.
    const { rows } = await this.db.query<ClientAndToken>(
      `SELECT (SELECT row_to_json(c) FROM (SELECT ${CLIENT_COLUMNS} FROM clients WHERE id = $1) c) AS client,
        (SELECT row_to_json(t) FROM (SELECT ${TOKEN_COLUMNS} FROM tokens WHERE digest = $2) t) AS token`,
      [clientId, digest],
    );
    return { client: rows[0]?.client ?? null, token: rows[0]?.token ?? null };
  }

  async scanTokens(afterJti: string | null, limit: number): Promise<TokenRecord[]> {
    // The primary key's order (the database's collation), so that each page is an index range.
    const { rows } = await this.db.query<TokenRecord>(
      `SELECT ${TOKEN_COLUMNS} FROM tokens WHERE $1::text IS NULL OR jti > $1 ORDER BY jti LIMIT $2`,
      [afterJti, Math.max(0, limit)],
    );
    return rows;
  }

  async findTokensByJti(jtis: readonly string[]): Promise<TokenRecord[]> {
    if (jtis.length === 0) return [];
    return (await this.db.query<TokenRecord>(`SELECT ${TOKEN_COLUMNS} FROM tokens WHERE jti = ANY($1::text[])`, [jtis])).rows;
  }

  async listTokens(filter: TokenFilter): Promise<TokenRecord[]> {
    const { sql, params } = listTokensQuery(filter);
    return (await this.db.query<TokenRecord>(sql, params)).rows;
  }

  async countTokens(filter: TokenFilter): Promise<number> {
    const { sql, params } = countTokensQuery(filter);
    return (await this.db.query<{ n: number }>(sql, params)).rows[0]?.n ?? 0;
  }

  async countRevocable(selector: BulkSelector, now: number): Promise<number> {
    const { sql, params, condition } = revocableQuery(selector, now);
    return (await this.db.query<{ n: number }>(`${sql} SELECT count(*) AS n FROM tokens WHERE ${condition}`, params)).rows[0]?.n ?? 0;
  }

  async revokeToken(jti: string, at: number, cascadeGrant = false, audit?: AuditEntry): Promise<boolean> {
    const revokeOne = 'UPDATE tokens SET revoked_at = $1 WHERE jti = $2 AND revoked_at IS NULL RETURNING grant_id AS "grantId"';
    if (!cascadeGrant && !audit) return (await this.db.query(revokeOne, [at, jti])).rowCount === 1;
    return this.db.transaction(async (db) => {
      // The row lock taken here makes this call the one that revoked it, or not.
      const revoked = (await db.query<{ grantId: string }>(revokeOne, [at, jti])).rows[0];
      if (revoked === undefined) return false;
      if (cascadeGrant) await db.query(REVOKE_GRANT, [at, revoked.grantId]);
      if (audit) await db.query(INSERT_AUDIT, auditParams(audit));
      return true;
    });
  }

  async insertMintedAccess(access: TokenRecord, refreshJti: string): Promise<MintOutcome> {
    // Under READ COMMITTED a concurrent revocation of the grant may not see a row inserted
    // beside its snapshot, so the refresh token is read again once the insert has committed:
    // if it stopped being current meanwhile, the new token is revoked before anyone has it.
    await this.insertTokens([access]);
    const current = await this.findTokenByJti(refreshJti);
    if (current && current.revokedAt === null && current.replacedAt === null) return 'inserted';
    await this.revokeToken(access.jti, access.issuedAt);
    return current ? 'revoked' : 'unknown';
  }

  async revokeGrant(grantId: string, at: number): Promise<number> {
    return (await this.db.query(REVOKE_GRANT, [at, grantId])).rowCount ?? 0;
  }

  async revokeBulk(selector: BulkSelector, at: number): Promise<number> {
    // One statement, with the same selection as countRevocable, so that the number an operator
    // confirmed is what happens. Rows changed meanwhile by another node are checked again.
    const { sql, params, condition } = revocableQuery(selector, at);
    return (await this.db.query(`${sql} UPDATE tokens SET revoked_at = $1 WHERE ${condition}`, params)).rowCount ?? 0;
  }

  async rotateRefreshToken(oldJti: string, issued: TokenRecord[], at: number, revokeJti?: string): Promise<RotateOutcome> {
    const next = issued.find((t) => t.type === 'refresh_token')?.jti ?? null;
    return this.db.transaction<RotateOutcome>(async (db) => {
      if (revokeJti === undefined) {
        // The conditional update decides the race: a concurrent caller waits for this row's
        // lock, then finds it replaced, and sees rowCount 0.
        const replaced = await db.query(
          'UPDATE tokens SET replaced_at = $1, replaced_by = $2 WHERE jti = $3 AND revoked_at IS NULL AND replaced_at IS NULL',
          [at, next, oldJti],
        );
        if (replaced.rowCount !== 1) return new Rollback('conflict');
      } else {
        // Grace re-use. The old token is locked first: concurrent re-uses of it queue here, and
        // only the first still finds it pointing at the lost replacement.
        const repointed = await db.query(
          'UPDATE tokens SET replaced_at = coalesce(replaced_at, $1), replaced_by = $2 WHERE jti = $3 AND revoked_at IS NULL AND replaced_by = $4',
          [at, next, oldJti, revokeJti],
        );
        if (repointed.rowCount !== 1) return new Rollback('conflict');
        // The lost replacement must still be current (not refreshed or revoked meanwhile).
        const lost = await db.query(
          'UPDATE tokens SET revoked_at = $1 WHERE jti = $2 AND revoked_at IS NULL AND replaced_at IS NULL',
          [at, revokeJti],
        );
        if (lost.rowCount !== 1) return new Rollback('conflict');
        // And the access tokens issued with it, in the same response that was lost (never those of
        // the old token's own generation, should both have been issued in one millisecond).
        await db.query(
          `UPDATE tokens SET revoked_at = $1 WHERE revoked_at IS NULL AND type = 'access_token'
            AND (grant_id, issued_at) = (SELECT grant_id, issued_at FROM tokens WHERE jti = $2)
            AND issued_at <> (SELECT issued_at FROM tokens WHERE jti = $3)`,
          [at, revokeJti, oldJti],
        );
      }
      if (issued.length > 0) await db.query(INSERT_TOKENS, tokenColumns(issued));
      return 'rotated';
    });
  }

  async purgeBatch(before: number, batchSize: number, audit?: AuditEntry): Promise<number> {
    if (!audit) return (await this.db.query(PURGE_BATCH, [before, Math.max(0, batchSize)])).rowCount ?? 0;
    // One statement: the audit row is written with the deletion, or neither is.
    const { rows } = await this.db.query<{ n: number }>(
      `WITH deleted AS (${PURGE_BATCH} RETURNING 1),
        logged AS (INSERT INTO audit (at, actor, action, target, count, detail)
          SELECT $3, $4, $5, $6, count(*), $7 FROM deleted HAVING count(*) > 0)
      SELECT count(*)::int AS n FROM deleted`,
      [before, Math.max(0, batchSize), audit.at, audit.actor, audit.action, audit.target, audit.detail],
    );
    return rows[0]?.n ?? 0;
  }

  async countPurgeable(before: number): Promise<number> {
    return (await this.db.query<{ n: number }>(`SELECT count(*) AS n FROM tokens WHERE ${PURGEABLE_SQL}`, [before])).rows[0]?.n ?? 0;
  }

  async stats(now: number, clientId?: string): Promise<StoreStats> {
    type Row = { clients: number; oldestExpiredAt: number | null; byState: { type: TokenType; state: TokenState; n: number }[] };
    const row = (await this.db.query<Row>(STATS, [now, clientId ?? null])).rows[0];
    const tokens = Object.fromEntries(TOKEN_TYPES.map((type) => [type, { active: 0, expired: 0, revoked: 0 }])) as StoreStats['tokens'];
    for (const s of row?.byState ?? []) tokens[s.type][s.state] = s.n;
    return { clients: row?.clients ?? 0, tokens, oldestExpiredAt: row?.oldestExpiredAt ?? null };
  }

  // ---- audit ------------------------------------------------------------------------------

  async appendAudit(e: AuditEntry): Promise<void> {
    await this.db.query(INSERT_AUDIT, auditParams(e));
  }

  async listAudit(filter: AuditFilter): Promise<AuditEntry[]> {
    const { since = null, jti = null, clientId = null, limit = null } = filter;
    return (await this.db.query<AuditEntry>(LIST_AUDIT, [since, jti, clientId, limit])).rows;
  }

  async ping(): Promise<void> {
    await this.db.query('SELECT 1');
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}

const INSERT_AUDIT = 'INSERT INTO audit (at, actor, action, target, count, detail) VALUES ($1, $2, $3, $4, $5, $6)';

function auditParams(e: AuditEntry): unknown[] {
  return [e.at, e.actor, e.action, e.target, e.count, e.detail];
}

/** The schema unqualified names resolve to, when the caller named none. */
async function currentSchema(db: PoolClient, location: string): Promise<string> {
  const { rows } = await db.query<{ schema: string | null }>('SELECT current_schema() AS schema');
  const schema = rows[0]?.schema;
  if (!schema) throw new Error(`cannot open ${location}: its search_path names no existing schema; name one with ?schema=NAME in the URL`);
  return schema;
}
