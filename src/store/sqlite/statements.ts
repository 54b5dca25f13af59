import type Database from 'better-sqlite3';
import type { BulkSelector, ClientRecord, ClientSettings, TokenFilter, TokenRecord, TokenType } from '../store.js';

/*
 * The SQL of the SQLite store, apart from the code that runs it. Every statement here is
 * prepared once, when the store opens (listTokens: once per filter shape).
 */

// Rows come back under the record's own names, so no mapping code can drift from the schema.
const TOKEN_COLUMNS = `jti, digest, type, grant_id AS grantId, client_id AS clientId, username, sub, scope, audience,
  org_id AS orgId, node, issued_at AS issuedAt, not_before AS notBefore, expires_at AS expiresAt,
  revoked_at AS revokedAt, replaced_at AS replacedAt, replaced_by AS replacedBy, jkt`;
const CLIENT_COLUMNS = `id, name, secret_hash AS secretHash, scope, org_id AS orgId, audience, access_ttl_ms AS accessTtlMs,
  refresh_ttl_ms AS refreshTtlMs, created_at AS createdAt, secret_updated_at AS secretUpdatedAt,
  redirect_uris AS redirectUris, grant_types AS grantTypes, login_provider AS loginProvider, require_dpop AS requireDpop`;
/** tokenState() of store.ts, in SQL. */
const STATE_SQL = `CASE WHEN revoked_at IS NOT NULL OR replaced_at IS NOT NULL THEN 'revoked'
  WHEN expires_at <= @now THEN 'expired' ELSE 'active' END`;
/** Purgeable: expired, or revoked, before @before (a replaced token is neither, so it stays). */
const PURGEABLE_SQL = 'expires_at < @before OR revoked_at < @before';
/** One WHERE clause per shape of BulkSelector, each served by an index. */
const SELECTORS = {
  jti: 'jti = @jti',
  user: 'username = @username',
  userClient: 'username = @username AND client_id = @clientId',
  client: 'client_id = @clientId',
} as const;
type SelectorKind = keyof typeof SELECTORS;

export function selectorKind(selector: BulkSelector): SelectorKind {
  if ('jti' in selector) return 'jti';
  if ('username' in selector) return selector.clientId === undefined ? 'user' : 'userClient';
  return 'client';
}

export type Statement = Database.Statement<unknown[], unknown>;

/** A client row as the client statements return it: lists as space-separated words, the flags as 0 or 1 (migrations 6, 7). */
export type ClientRow = Omit<ClientRecord, keyof ClientSettings> & { redirectUris: string; grantTypes: string; loginProvider: number; requireDpop: number };

/** The record of a client row; null for no row. */
export function clientFromRow(row: ClientRow | undefined): ClientRecord | null {
  if (row === undefined) return null;
  return { ...row, redirectUris: words(row.redirectUris), grantTypes: words(row.grantTypes), loginProvider: row.loginProvider === 1, requireDpop: row.requireDpop === 1 };
}

/** A client's settings as the client statements bind them (@redirectUris, @grantTypes, @loginProvider, @requireDpop). */
export function settingsParams(settings: ClientSettings): { redirectUris: string; grantTypes: string; loginProvider: number; requireDpop: number } {
  return {
    redirectUris: settings.redirectUris.join(' '),
    grantTypes: settings.grantTypes.join(' '),
    loginProvider: settings.loginProvider ? 1 : 0,
    requireDpop: settings.requireDpop ? 1 : 0,
  };
}

/** Space-separated words as a list: none for ''. */
function words(text: string): string[] {
  return text === '' ? [] : text.split(' ');
}

/** A row of the raw token statements (columns in TOKEN_COLUMNS' order) as a record; null for no row. */
export function tokenFromRow(row: unknown[] | undefined): TokenRecord | null {
  if (row === undefined) return null;
  return {
    jti: row[0] as string,
    digest: row[1] as string,
    type: row[2] as TokenType,
    grantId: row[3] as string,
    clientId: row[4] as string,
    username: row[5] as string,
    sub: row[6] as string,
    scope: row[7] as string,
    audience: row[8] as string,
    orgId: row[9] as string,
    node: row[10] as string,
    issuedAt: row[11] as number,
    notBefore: row[12] as number,
    expiresAt: row[13] as number,
    revokedAt: row[14] as number | null,
    replacedAt: row[15] as number | null,
    replacedBy: row[16] as string | null,
    jkt: (row[17] as string | null) ?? null,
  };
}

/** Inserts a token record with the positional `insert` statement of {@link prepareStatements}. */
export function insertToken(insert: Statement, t: TokenRecord): void {
  insert.run(t.jti, t.digest, t.type, t.grantId, t.clientId, t.username, t.sub, t.scope, t.audience, t.orgId, t.node, t.issuedAt, t.notBefore, t.expiresAt, t.revokedAt, t.replacedAt, t.replacedBy, t.jkt ?? null);
}

/** Every statement, prepared once when the store opens. */
export function prepareStatements(db: Database.Database) {
  const p = (sql: string): Statement => db.prepare(sql);
  // The selected live tokens, and the live tokens of a grant whose refresh token is selected:
  // one predicate for the count and the revocation, so the prompt's number is what happens.
  const bulk = (where: string) => {
    const target = `revoked_at IS NULL AND expires_at > @at AND (${where}
      OR grant_id IN (SELECT grant_id FROM tokens WHERE type = 'refresh_token' AND revoked_at IS NULL AND expires_at > @at AND ${where}))`;
    return {
      count: p(`SELECT count(*) AS n FROM tokens WHERE ${target}`),
      revoke: p(`UPDATE tokens SET revoked_at = @at WHERE ${target}`),
      // One batch of a user's or a client's tokens, a short write transaction repeated by the
      // caller: the next window of up to @limit of its rows after @after, by rowid (read from the
      // index alone, whatever their state, so that rows done are never looked at again), then the
      // live ones in it, with the live tokens of every refresh token's grant in it (an access token
      // minted from that grant is revoked with it, wherever its rowid is).
      window: p(`SELECT count(*) AS n, max(rowid) AS last FROM (SELECT rowid FROM tokens WHERE ${where} AND rowid > @after ORDER BY rowid LIMIT @limit)`),
      revokeWindow: p(`UPDATE tokens SET revoked_at = @at WHERE revoked_at IS NULL AND expires_at > @at
        AND (rowid IN (SELECT rowid FROM tokens WHERE ${where} AND rowid > @after AND rowid <= @last)
          OR grant_id IN (SELECT grant_id FROM tokens WHERE ${where} AND rowid > @after AND rowid <= @last AND type = 'refresh_token'))`),
    };
  };
  return {
    bulk: {
      jti: bulk(SELECTORS.jti),
      user: bulk(SELECTORS.user),
      userClient: bulk(SELECTORS.userClient),
      client: bulk(SELECTORS.client),
    },
    insertClient: p(`INSERT INTO clients (id, name, secret_hash, scope, org_id, audience, access_ttl_ms, refresh_ttl_ms, created_at, secret_updated_at,
        redirect_uris, grant_types, login_provider, require_dpop)
      VALUES (@id, @name, @secretHash, @scope, @orgId, @audience, @accessTtlMs, @refreshTtlMs, @createdAt, @secretUpdatedAt,
        @redirectUris, @grantTypes, @loginProvider, @requireDpop)`),
    getClient: p(`SELECT ${CLIENT_COLUMNS} FROM clients WHERE id = ?`),
    listClients: p(`SELECT ${CLIENT_COLUMNS} FROM clients ORDER BY created_at, id`),
    deleteClient: p('DELETE FROM clients WHERE id = ?'), // its tokens go by ON DELETE CASCADE
    updateSecret: p('UPDATE clients SET secret_hash = ?, secret_updated_at = ? WHERE id = ?'),
    updateSettings: p('UPDATE clients SET redirect_uris = @redirectUris, grant_types = @grantTypes, login_provider = @loginProvider, require_dpop = @requireDpop WHERE id = @id'),
    // Positional parameters (insertToken below): binding 18 named ones looks each name up on the
    // record, a sixth of a refresh's store work.
    insert: p(`INSERT INTO tokens (jti, digest, type, grant_id, client_id, username, sub, scope, audience, org_id, node,
        issued_at, not_before, expires_at, revoked_at, replaced_at, replaced_by, jkt)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
    // Rows as arrays (tokenFromRow): better-sqlite3 makes an array much faster than an object.
    byDigest: p(`SELECT ${TOKEN_COLUMNS} FROM tokens WHERE digest = ?`).raw(true),
    byJti: p(`SELECT ${TOKEN_COLUMNS} FROM tokens WHERE jti = ?`).raw(true),
    // scanTokens: pages in the order of the jti index, each page a range of it.
    scanFirst: p(`SELECT ${TOKEN_COLUMNS} FROM tokens ORDER BY jti LIMIT ?`).raw(true),
    scanAfter: p(`SELECT ${TOKEN_COLUMNS} FROM tokens WHERE jti > ? ORDER BY jti LIMIT ?`).raw(true),
    byJtis: p(`SELECT ${TOKEN_COLUMNS} FROM tokens WHERE jti IN (SELECT value FROM json_each(?))`).raw(true),
    // Changes whenever another connection commits (https://sqlite.org/pragma.html#pragma_data_version).
    dataVersion: p('PRAGMA data_version').pluck(true),
    revokeOne: p('UPDATE tokens SET revoked_at = ? WHERE jti = ? AND revoked_at IS NULL'),
    // A refresh token's state for a mint, in one read: [stopped being current (0 or 1), the tokens
    // of its grant issued after ?1, counted up to ?2 from the (grant_id, issued_at) index alone].
    // `LIMIT ? + 0`, not `LIMIT ?`: a bare parameter as a subquery's limit makes SQLite prepare the
    // statement again whenever its value is bound (as costly as the rest of the mint together).
    mintState: p(`SELECT revoked_at IS NOT NULL OR replaced_at IS NOT NULL,
        (SELECT count(*) FROM (SELECT 1 FROM tokens AS g WHERE g.grant_id = t.grant_id AND g.issued_at > ? LIMIT ? + 0))
      FROM tokens AS t WHERE jti = ?`).raw(true),
    revokeGrant: p('UPDATE tokens SET revoked_at = ? WHERE grant_id = ? AND revoked_at IS NULL'),
    replace: p('UPDATE tokens SET replaced_at = ?, replaced_by = ? WHERE jti = ? AND revoked_at IS NULL AND replaced_at IS NULL'),
    // Grace re-use: the lost replacement must be current, and still the one `old` points at.
    // Superseded: revoked, and replaced by the new token, so that presenting it again is reuse.
    revokeLost: p(`UPDATE tokens SET revoked_at = @at, replaced_at = @at, replaced_by = @next WHERE jti = @lost AND revoked_at IS NULL AND replaced_at IS NULL
      AND EXISTS (SELECT 1 FROM tokens WHERE jti = @old AND revoked_at IS NULL AND replaced_by = @lost)`),
    // And the access tokens issued with it (same grant, same instant): they were in the lost response.
    // Never those of the old token's own generation, should both have been issued in one millisecond.
    revokeLostAccess: p(`UPDATE tokens SET revoked_at = @at WHERE revoked_at IS NULL AND type = 'access_token'
      AND grant_id = (SELECT grant_id FROM tokens WHERE jti = @lost) AND issued_at = (SELECT issued_at FROM tokens WHERE jti = @lost)
      AND issued_at <> (SELECT issued_at FROM tokens WHERE jti = @old)`),
    repoint: p('UPDATE tokens SET replaced_at = coalesce(replaced_at, ?), replaced_by = ? WHERE jti = ?'),
    purge: p(`DELETE FROM tokens WHERE rowid IN (SELECT rowid FROM tokens WHERE ${PURGEABLE_SQL} LIMIT @limit)`),
    countPurgeable: p(`SELECT count(*) AS n FROM tokens WHERE ${PURGEABLE_SQL}`),
    // The oldest first, by the primary key: lines are appended in time order.
    purgeAudit: p('DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE at < @before ORDER BY id LIMIT @limit)'),
    countAuditBefore: p('SELECT count(*) AS n FROM audit WHERE at < @before'),
    countClients: p('SELECT count(*) AS n FROM clients'),
    tokenStats: p(`SELECT type, ${STATE_SQL} AS state, count(*) AS n FROM tokens GROUP BY 1, 2`),
    oldestExpired: p('SELECT min(expires_at) AS at FROM tokens WHERE expires_at <= @now'),
    // One client's: served by the client_id index, so a client with a million tokens is counted, not loaded.
    clientTokenStats: p(`SELECT type, ${STATE_SQL} AS state, count(*) AS n FROM tokens WHERE client_id = @clientId GROUP BY 1, 2`),
    clientOldestExpired: p('SELECT min(expires_at) AS at FROM tokens WHERE client_id = @clientId AND expires_at <= @now'),
    insertAudit: p('INSERT INTO audit (at, actor, action, target, count, detail) VALUES (@at, @actor, @action, @target, @count, @detail)'),
    listAudit: p(`SELECT id, at, actor, action, target, count, detail FROM audit WHERE ${AUDIT_CONDITIONS}
        AND (@beforeId IS NULL OR id < @beforeId)
      ORDER BY id DESC LIMIT @limit`),
    countAudit: p(`SELECT count(*) AS n FROM audit WHERE ${AUDIT_CONDITIONS}`),
    ping: p('SELECT count(*) FROM migrations'),
  };
}

/** The audit filters (AuditFilter), `beforeId` and `limit` aside; @hide is a JSON array of actions. */
const AUDIT_CONDITIONS = `(@since IS NULL OR at >= @since) AND (@jti IS NULL OR instr(' ' || target || ' ', ' ' || @jti || ' ') > 0)
        AND (@clientId IS NULL OR actor = @clientId OR instr(' ' || target || ' ', ' client:' || @clientId || ' ') > 0)
        AND (@hide IS NULL OR action NOT IN (SELECT value FROM json_each(@hide)))`;

/** listTokens' query for the filter's shape: only the conditions it uses, so that indexes apply. */
export function listTokensSql(filter: TokenFilter): string {
  const where = tokenConditions(filter);
  if (filter.after !== undefined) where.push('(issued_at < @afterAt OR (issued_at = @afterAt AND jti > @afterJti))');
  return `SELECT ${TOKEN_COLUMNS} FROM tokens WHERE ${where.join(' AND ')} ORDER BY issued_at DESC, jti LIMIT @limit`;
}

/** countTokens' query for the filter's shape (limit and after do not apply). */
export function countTokensSql(filter: TokenFilter): string {
  return `SELECT count(*) AS n FROM tokens WHERE ${tokenConditions(filter).join(' AND ')}`;
}

function tokenConditions(filter: TokenFilter): string[] {
  const where = ['1'];
  if (filter.clientId !== undefined) where.push('client_id = @clientId');
  if (filter.username !== undefined) where.push('username = @username');
  if (filter.type !== undefined) where.push('type = @type');
  if (filter.state !== undefined) where.push(`${STATE_SQL} = @state`);
  return where;
}
