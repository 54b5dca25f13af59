import type { PoolClient } from 'pg';
import {
  DuplicateClientError,
  NoStoreError,
  TOKEN_TYPES,
  type AuditEntry,
  type AuditFilter,
  type BulkBatch,
  type BulkSelector,
  type ClientAndToken,
  type ClientRecord,
  type MintLimit,
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
import { DEFAULT_POOL_SIZE, checkSchemaName, createPool, schemaFromUrl } from './pool.js';
import {
  bulkGrantBatch,
  CLIENT_COLUMNS,
  INSERT_GRANT_TOKENS,
  INSERT_TOKENS,
  LOCK_LIVE_GRANT_TX,
  LOCK_REVOKED_GRANT,
  LOCK_REVOKED_GRANT_OF_TOKEN,
  MINT_ACCESS,
  REVOKE_GRANTS_LIVE,
  ROTATE,
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
  /** Connections in the pool (default {@link DEFAULT_POOL_SIZE}: what one CLI command needs; `serve` sets its own). */
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
   * How long serialization failures and deadlocks are retried before the store counts as
   * unavailable (default 2 s: a request's budget). An operator's command may wait longer.
   */
  retryBudgetMs?: number;
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
    const statementTimeoutMs = options.statementTimeoutMs ?? 30_000;
    const pool = createPool(url, {
      poolSize: options.poolSize ?? DEFAULT_POOL_SIZE,
      connectionTimeoutMs: options.connectionTimeoutMs ?? 3_000,
      statementTimeoutMs,
    });
    try {
      await withClient(pool, async (db) => {
        const target = schema ?? (await currentSchema(db, location));
        if (options.create === false && (await identify(db, target, location)) === 0) {
          throw new NoStoreError(location, `schema "${target}" holds no tokenctl tables (check the database name and ?schema= in the URL)`);
        }
        await migrate(db, target, location);
      });
      return new PostgresStore(new Database(pool, location, { schema, statementTimeoutMs, retryBudgetMs: options.retryBudgetMs }), location);
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
    return this.db.transaction(async (db) => {
      // Its grants' locks first, as every grant revocation takes them: a mint under way commits
      // first (and its token goes with the client), a later one finds the grant gone.
      await db.query('SELECT 1 FROM grants WHERE client_id = $1 ORDER BY grant_id FOR UPDATE', [id]);
      // Its grants and tokens go by ON DELETE CASCADE, in the same statement.
      return (await db.query('DELETE FROM clients WHERE id = $1', [id])).rowCount === 1;
    });
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
    if (!cascadeGrant) {
      // One statement: the conditional update decides who revoked it, and the audit line goes with it.
      const { rows } = await this.db.query<{ revoked: boolean }>(
        `WITH r AS (UPDATE tokens SET revoked_at = $1 WHERE jti = $2 AND revoked_at IS NULL RETURNING 1),
          a AS (INSERT INTO audit (at, actor, action, target, count, detail) SELECT $3, $4, $5, $6, $7, $8 WHERE $9 AND EXISTS (SELECT 1 FROM r))
          SELECT EXISTS (SELECT 1 FROM r) AS revoked`,
        [at, jti, ...auditParams(audit ?? NO_AUDIT), audit !== undefined],
      );
      return rows[0]?.revoked === true;
    }
    return this.db.transaction(async (db) => {
      // The grant lock first, as every grant revocation; the token names its grant.
      const grantId = (await db.query<{ grantId: string }>(LOCK_REVOKED_GRANT_OF_TOKEN, [at, jti])).rows[0]?.grantId;
      if (grantId === undefined) return new Rollback(false);
      // The row lock taken here makes this call the one that revoked it, or not.
      if ((await db.query(revokeOne, [at, jti])).rowCount !== 1) return new Rollback(false);
      await db.query(REVOKE_GRANT, [at, grantId]);
      if (audit) await db.query(INSERT_AUDIT, auditParams(audit));
      return true;
    });
  }

  async insertMintedAccess(access: TokenRecord, refreshJti: string, limit?: MintLimit): Promise<MintOutcome> {
    // One statement under the grant lock (MINT_ACCESS): a revocation of the grant either committed
    // first, and the lock, waited for, shows the grant revoked; or it waits for this insert to
    // commit, and then revokes the new token too.
    const params = [...tokenColumns([access]), access.grantId, refreshJti, limit?.since ?? null, limit?.max ?? null];
    const { rows } = await this.db.query<{ inserted: boolean; known: boolean; limited: boolean }>(MINT_ACCESS, params);
    const outcome = rows[0];
    if (outcome?.inserted) return 'inserted';
    if (!outcome?.known) return 'unknown';
    return outcome.limited ? 'limited' : 'revoked'; // limited: only when nothing else stopped it
  }

  async revokeGrant(grantId: string, at: number, audit?: AuditEntry): Promise<number> {
    return this.db.transaction(async (db) => {
      await db.query(LOCK_REVOKED_GRANT, [at, grantId]);
      // A statement of its own: its snapshot, taken once the lock is ours, has every token minted
      // by a transaction that held the lock before us (READ COMMITTED; at SERIALIZABLE, a mint we
      // cannot see makes one of the two fail with a serialization error, and it runs again).
      const revoked = (await db.query(REVOKE_GRANT, [at, grantId])).rowCount ?? 0;
      if (revoked > 0 && audit) await db.query(INSERT_AUDIT, auditParams({ ...audit, count: revoked }));
      return revoked;
    });
  }

  /** Needs no `resume`: each batch takes the first unrevoked grants, and those it revokes are no longer. */
  async revokeBulk(selector: BulkSelector, at: number, limit: number, audit?: AuditEntry): Promise<BulkBatch> {
    if ('jti' in selector) return { revoked: await this.revokeJti(selector.jti, at, audit), more: false };
    return this.db.transaction(async (db) => {
      const batch = bulkGrantBatch(selector, at, Math.max(1, limit));
      const grants = (await db.query<{ grantId: string }>(batch.sql, batch.params)).rows.map((r) => r.grantId);
      if (grants.length === 0) return { revoked: 0, more: false };
      const revoked = (await db.query(REVOKE_GRANTS_LIVE, [at, grants])).rowCount ?? 0;
      if (revoked > 0 && audit) await db.query(INSERT_AUDIT, auditParams({ ...audit, count: revoked }));
      // Until a batch finds no unrevoked grant: one that a concurrent revocation took from under
      // this batch's LIMIT must not end the loop while others remain.
      return { revoked, more: true };
    });
  }

  /** `revoke --jti`: the live token, and its whole grant under the grant lock when it is a refresh token. */
  private async revokeJti(jti: string, at: number, audit: AuditEntry | undefined): Promise<number> {
    const { sql, params, condition } = revocableQuery({ jti }, at);
    return this.db.transaction(async (db) => {
      const named = (await db.query<{ grantId: string; type: string }>('SELECT grant_id AS "grantId", type FROM tokens WHERE jti = $1', [jti])).rows[0];
      if (named?.type === 'refresh_token') await db.query(LOCK_REVOKED_GRANT, [at, named.grantId]);
      const revoked = (await db.query(`${sql} UPDATE tokens SET revoked_at = $1 WHERE ${condition}`, params)).rowCount ?? 0;
      if (revoked === 0) return new Rollback(0); // nothing live: the grant stays as it was
      if (audit) await db.query(INSERT_AUDIT, auditParams({ ...audit, count: revoked }));
      return revoked;
    });
  }

  async rotateRefreshToken(oldJti: string, issued: TokenRecord[], at: number, revokeJti?: string): Promise<RotateOutcome> {
    const next = issued.find((t) => t.type === 'refresh_token')?.jti ?? null;
    if (revokeJti === undefined) {
      const grantId = issued[0]?.grantId ?? (await this.findTokenByJti(oldJti))?.grantId ?? null;
      const { rows } = await this.db.query<{ rotated: boolean }>(ROTATE, [...tokenColumns(issued), grantId, at, next, oldJti]);
      return rows[0]?.rotated ? 'rotated' : 'conflict';
    }
    return this.db.transaction<RotateOutcome>(async (db) => {
      // Grace re-use. The grant lock first (a revocation of the grant waits, or has won), then the
      // old token: concurrent re-uses of it queue there, and only the first still finds it
      // pointing at the lost replacement.
      const grantId = (await db.query<{ grantId: string }>('SELECT grant_id AS "grantId" FROM tokens WHERE jti = $1', [oldJti])).rows[0]?.grantId;
      if (grantId === undefined || (await db.query(LOCK_LIVE_GRANT_TX, [grantId])).rowCount !== 1) return new Rollback('conflict');
      const repointed = await db.query(
        'UPDATE tokens SET replaced_at = coalesce(replaced_at, $1), replaced_by = $2 WHERE jti = $3 AND revoked_at IS NULL AND replaced_by = $4',
        [at, next, oldJti, revokeJti],
      );
      if (repointed.rowCount !== 1) return new Rollback('conflict');
      // The lost replacement must still be current (not refreshed or revoked meanwhile); it is
      // superseded: revoked, and replaced by the new token, so that presenting it again is reuse.
      const lost = await db.query(
        'UPDATE tokens SET revoked_at = $1, replaced_at = $1, replaced_by = $3 WHERE jti = $2 AND revoked_at IS NULL AND replaced_at IS NULL',
        [at, revokeJti, next],
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
      if (issued.length > 0) await db.query(INSERT_GRANT_TOKENS, tokenColumns(issued));
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
const NO_AUDIT: AuditEntry = { at: 0, actor: '', action: '', target: '', count: 0, detail: '' };
const revokeOne = 'UPDATE tokens SET revoked_at = $1 WHERE jti = $2 AND revoked_at IS NULL';

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
