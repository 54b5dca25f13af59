import type { Trail } from '../trail.js';
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
  type ClientSettings,
  type MintLimit,
  type MintOutcome,
  type PoolState,
  type RotateOutcome,
  type StoreObserver,
  type StoreStats,
  type TokenFilter,
  type TokenRecord,
  type TokenState,
  type TokenStore,
  type TokenType,
} from '../store.js';
import type { AuthorizationStore, EventStore } from '../store.js';
import { ForwardsAuthorizationStore } from '../forward-authorizations.js';
import { Batcher, insertMints, MAX_BATCH, MAX_MINT_BATCH, readClientsAndTokens, revokeTokens, type Mint, type Revocation } from './batching.js';
import { Database, withClient, type Isolation } from './database.js';
import { PostgresEvents } from './outbox-store.js';
import { PostgresDpopProofs } from './dpop-proofs.js';
import { PostgresAuthorizations } from './authorizations.js';
import { isUniqueViolation, mapPgError, redactUrl } from './errors.js';
import { META_TABLE } from './migrations.js';
import { identify, migrate } from './schema.js';
import { eventParams, oneEventCtes, OUTBOX_LOCK } from './event-writes.js';
import { DEFAULT_POOL_SIZE, checkSchemaName, createPool, isolationFromUrl, schemaFromUrl } from './pool.js';
import {
  auditAt,
  auditParams,
  countedAuditParams,
  insertAudit,
  CLIENT_COLUMNS,
  countTokensQuery,
  INSERT_AUDIT,
  INSERT_TOKENS,
  LIST_AUDIT,
  COUNT_AUDIT,
  listTokensQuery,
  optionalAudit,
  FIRST_TUPLE,
  PURGEABLE_SQL,
  PURGE_AUDIT,
  PURGE_GRANTS,
  revocableQuery,
  STATS,
  TOKEN_COLUMNS,
  tokenColumns,
} from './statements.js';
import { purgeBatch, revokeBulk, revokeGrant, revokeWithGrant, rotateRefreshToken, type PurgeScan } from './writes.js';

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
  /** Told the size of each batch of revocations committed together (metrics). */
  observer?: StoreObserver;
  /**
   * The isolation level every transaction names (default READ COMMITTED, whatever the
   * database's default); the URL may say `?isolation=serializable` instead.
   */
  isolation?: Isolation;
}

/**
 * The PostgreSQL {@link TokenStore}: one database shared by many server nodes and CLI commands.
 *
 * Nothing is cached and nothing is locked in the process: racing requests may arrive at
 * different nodes, so every atomic operation is one statement or one transaction whose
 * conditional UPDATE decides the race under PostgreSQL's row locks (READ COMMITTED re-checks a
 * row's conditions after waiting for a concurrent writer). Every transaction names its level
 * (database.ts); a statement sent alone takes its snapshot at its start at any level, and at a
 * stricter default a conflict it meets is a serialization failure, which is run again. An unreachable or vanished database
 * surfaces as {@link StoreUnavailableError} within the connection timeout, and the pool
 * reconnects by itself when the database is back.
 */
export class PostgresStore extends ForwardsAuthorizationStore implements TokenStore {
  /** Reads and single-token revocations that arrive together share a round trip (batching.ts). */
  private readonly reads: Batcher<{ clientId: string; digest: string | null }, ClientAndToken>;
  private readonly revocations: Batcher<Revocation, boolean>;
  private readonly mints: Batcher<Mint, MintOutcome>;
  /** Where this process's next purge batch scans for revoked tokens from (writes.ts). */
  private readonly purgeScan: PurgeScan = { from: FIRST_TUPLE };
  private readonly events: PostgresEvents;
  /** The authorization code flow's requests (authorizations.ts). */
  private readonly authorizations: PostgresAuthorizations;
  /** The DPoP proofs seen (dpop-proofs.ts). */
  private readonly dpopProofs: PostgresDpopProofs;

  private constructor(
    private readonly db: Database,
    readonly location: string,
    poolSize: number,
    observer: StoreObserver | undefined,
  ) {
    super();
    // Half the pool each at most, so that neither kind starves the other or the rest.
    const inFlight = Math.max(1, Math.floor(poolSize / 2));
    this.reads = new Batcher(readClientsAndTokens(db), inFlight, MAX_BATCH);
    const commitBatch = observer?.commitBatch?.bind(observer);
    this.revocations = new Batcher(revokeTokens(db), inFlight, MAX_BATCH, commitBatch);
    // A mint batch holds its grant locks to its commit: small, so that a revocation waits little.
    this.mints = new Batcher(insertMints(db), inFlight, MAX_MINT_BATCH, commitBatch);
    this.events = new PostgresEvents(db);
    this.authorizations = new PostgresAuthorizations(db);
    this.dpopProofs = new PostgresDpopProofs(db);
  }

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
    const isolation = options.isolation ?? isolationFromUrl(url) ?? 'read committed';
    const location = options.schema === undefined ? redactUrl(url) : `${redactUrl(url)} (schema ${options.schema})`;
    const statementTimeoutMs = options.statementTimeoutMs ?? 30_000;
    const poolSize = options.poolSize ?? DEFAULT_POOL_SIZE;
    const pool = createPool(url, {
      poolSize,
      connectionTimeoutMs: options.connectionTimeoutMs ?? 3_000,
      statementTimeoutMs,
    });
    try {
      await withClient(pool, async (db) => {
        const target = schema ?? (await currentSchema(db, location));
        if (options.create === false && (await identify(db, target, location)).applied === 0) {
          throw new NoStoreError(location, `schema "${target}" holds no tokenctl tables (check the database name and ?schema= in the URL)`);
        }
        await migrate(db, target, location);
      });
      const db = new Database(pool, location, { schema, statementTimeoutMs, retryBudgetMs: options.retryBudgetMs, isolation });
      return new PostgresStore(db, location, poolSize, options.observer);
    } catch (error) {
      await pool.end().catch(() => undefined);
      throw mapPgError(error, location);
    }
  }

  async schemaVersion(): Promise<number> {
    // The last migration applied; `schema_version` alone on a store written before rolling upgrades (schema.ts).
    const { rows } = await this.db.query<{ key: string; value: string }>(`SELECT key, value FROM ${META_TABLE} WHERE key IN ('schema_version', 'applied_version')`);
    const value = (key: string) => rows.find((r) => r.key === key)?.value;
    return Number(value('applied_version') ?? value('schema_version') ?? 0);
  }

  // ---- clients --------------------------------------------------------------------------

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
    // With the other reads of this event-loop turn: one round trip, one snapshot (batching.ts).
    return this.reads.add({ clientId, digest });
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

  async revokeToken(jti: string, at: number, cascadeGrant: boolean, trail: Trail): Promise<boolean> {
    const { audit, event } = trail;
    if (cascadeGrant) return revokeWithGrant(this.db, jti, at, audit, event);
    return this.revocations.add({ jti, at, audit, event });
  }

  async insertMintedAccess(access: TokenRecord, refreshJti: string, limit?: MintLimit): Promise<MintOutcome> {
    return this.mints.add({ access, refreshJti, limit });
  }

  async revokeGrant(grantId: string, at: number, trail: Trail): Promise<number> {
    const { audit, event } = trail;
    return revokeGrant(this.db, grantId, at, audit, event);
  }

  async revokeBulk(selector: BulkSelector, at: number, limit: number, resume: string | undefined, trail: Trail): Promise<BulkBatch> {
    const { audit, event } = trail;
    return revokeBulk(this.db, selector, at, limit, audit, resume, event);
  }

  async rotateRefreshToken(oldJti: string, issued: TokenRecord[], at: number, revokeJti?: string): Promise<RotateOutcome> {
    return rotateRefreshToken(this.db, oldJti, issued, at, revokeJti);
  }

  async purgeBatch(before: number, batchSize: number, trail: Trail): Promise<number> {
    const { audit } = trail;
    return purgeBatch(this.db, this.purgeScan, before, batchSize, audit);
  }

  async rememberDpopProof(key: string, until: number, now: number): Promise<boolean> {
    return this.dpopProofs.rememberDpopProof(key, until, now);
  }

  async purgeDpopProofs(before: number, batchSize: number): Promise<number> {
    return this.dpopProofs.purgeDpopProofs(before, batchSize);
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

  // ---- audit ------------------------------------------------------------------------------

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

  async ping(): Promise<void> {
    await this.db.query('SELECT 1');
  }

  async close(): Promise<void> {
    await this.db.close();
  }

  poolState(): PoolState {
    return this.db.poolState();
  }

  // ---- security events (outbox-store.ts): the methods forward to this (forward-events.ts) ----

  protected _eventStore(): EventStore {
    return this.events;
  }

  /** The authorization code flow's requests (authorizations.ts): the methods forward to this (forward-authorizations.ts). */
  protected _authorizationStore(): AuthorizationStore {
    return this.authorizations;
  }
}

/** The schema unqualified names resolve to, when the caller named none. */
async function currentSchema(db: PoolClient, location: string): Promise<string> {
  const { rows } = await db.query<{ schema: string | null }>('SELECT current_schema() AS schema');
  const schema = rows[0]?.schema;
  if (!schema) throw new Error(`cannot open ${location}: its search_path names no existing schema; name one with ?schema=NAME in the URL`);
  return schema;
}

/** An audit filter as COUNT_AUDIT's $1–$4 (LIST_AUDIT's first four). */
function auditFilterParams(filter: AuditFilter): unknown[] {
  const { since = null, jti = null, clientId = null, hideActions } = filter;
  return [since, jti, clientId, hideActions === undefined || hideActions.length === 0 ? null : [...hideActions]];
}
