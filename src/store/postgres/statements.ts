import type { AuditEntry, ClientRecord, RevocationEvent, TokenRecord } from '../store.js';
import { eventParams, oneEventCtes, outboxCtes } from './event-writes.js';
import { auditAt, insertAudit, optionalAudit } from './audit-statements.js';

/*
 * The PostgreSQL store's SQL, beside the SQLite store's same statements. Rows come back under the
 * records' own names (quoted aliases), so no mapping code can drift from the schema; BIGINT
 * columns arrive as numbers through the pool's type parser (pool.ts).
 */

export const CLIENT_COLUMNS = `id, name, secret_hash AS "secretHash", scope, org_id AS "orgId", audience, access_ttl_ms AS "accessTtlMs",
  refresh_ttl_ms AS "refreshTtlMs", created_at AS "createdAt", secret_updated_at AS "secretUpdatedAt",
  redirect_uris AS "redirectUris", grant_types AS "grantTypes", login_provider AS "loginProvider", require_dpop AS "requireDpop"`;

const TOKEN_INSERT_COLUMNS = `jti, digest, type, grant_id, client_id, username, sub, scope, audience, org_id, node,
    issued_at, not_before, expires_at, revoked_at, replaced_at, replaced_by, jkt`;

/** {@link tokenColumns}' eighteen array parameters, $1 to $18, typed. */
const TOKEN_ARRAYS = `$1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
    $10::text[], $11::text[], $12::bigint[], $13::bigint[], $14::bigint[], $15::bigint[], $16::bigint[], $17::text[], $18::text[]`;

/** Rows of tokens from {@link TOKEN_ARRAYS}. */
const UNNEST_TOKENS = `unnest(${TOKEN_ARRAYS})`;

/**
 * Any number of tokens in one statement (so one atomic step, and one round trip even for a
 * hundred thousand): one array parameter per column, zipped by unnest. The grants they belong to
 * are created with them when new (a login, or a copy made by `tokenctl migrate`).
 */
export const INSERT_TOKENS = `WITH t (${TOKEN_INSERT_COLUMNS}) AS (SELECT * FROM ${UNNEST_TOKENS}),
  g AS (INSERT INTO grants (grant_id, client_id, username, created_at)
    SELECT DISTINCT ON (grant_id) grant_id, client_id, username, issued_at FROM t ORDER BY grant_id, issued_at
    ON CONFLICT (grant_id) DO NOTHING)
  INSERT INTO tokens (${TOKEN_INSERT_COLUMNS}) SELECT * FROM t`;

/**
 * The grant lock of a mint: FOR SHARE, so that mints of one grant do not wait for each other but
 * do wait for (and then see) a revocation of it, which UPDATEs the row first. Under READ COMMITTED
 * a row locked after waiting is checked again in its newest version.
 */
const LOCK_LIVE_GRANT = 'SELECT 1 FROM grants WHERE grant_id = $19 AND revoked_at IS NULL FOR SHARE';

/**
 * insertMintedAccess for any number of mints in one statement (one round trip, one plan, one
 * commit): row i of the access tokens ($1–$18) goes in only if its grant is unrevoked, under the
 * grant lock, its refresh token ($19[i]) is current, and the grant has fewer than $21[i] tokens
 * issued after $20[i] (no limit: null), counted from the (grant_id, issued_at) index, plus the
 * ones before it in this statement for the same grant. The grant locks are taken in grant_id
 * order, so that two batches never wait for each other in a cycle. One row per mint, in order:
 * whether it was inserted, whether its refresh token exists, and whether the limit alone stopped it.
 */
export const MINT_ACCESS = `WITH q AS (SELECT * FROM unnest(${TOKEN_ARRAYS}, $19::text[], $20::bigint[], $21::int[])
    WITH ORDINALITY AS q (${TOKEN_INSERT_COLUMNS}, refresh_jti, since, max, i)),
  g AS (SELECT grant_id FROM grants WHERE grant_id IN (SELECT grant_id FROM q) AND revoked_at IS NULL ORDER BY grant_id FOR SHARE),
  r AS (SELECT jti, revoked_at IS NULL AND replaced_at IS NULL AS current FROM tokens WHERE jti IN (SELECT refresh_jti FROM q)),
  ok AS (SELECT q.*, r.jti IS NOT NULL AS known, q.grant_id IN (SELECT grant_id FROM g) AND coalesce(r.current, false) AS allowed
    FROM q LEFT JOIN r ON r.jti = q.refresh_jti),
  counted AS (SELECT ok.*, ok.allowed AND ok.max IS NOT NULL AND
      (SELECT count(*) FROM (SELECT 1 FROM tokens t WHERE t.grant_id = ok.grant_id AND t.issued_at > ok.since LIMIT ok.max) x)
        + count(*) FILTER (WHERE ok.allowed) OVER (PARTITION BY ok.grant_id ORDER BY ok.i ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
        >= ok.max AS limited
    FROM ok),
  ins AS (INSERT INTO tokens (${TOKEN_INSERT_COLUMNS}) SELECT ${TOKEN_INSERT_COLUMNS} FROM counted WHERE allowed AND NOT limited RETURNING jti)
  SELECT jti IN (SELECT jti FROM ins) AS inserted, known, limited FROM counted ORDER BY i`;

/**
 * rotateRefreshToken without grace, in one statement: under the grant lock ($19), the old token
 * ($22) is marked replaced at $20 by $21, if it is still current, and only then are the new tokens
 * ($1–$18) inserted. A concurrent rotation of the same token waits for the old token's row, then
 * finds it replaced and writes nothing.
 */
export const ROTATE = `WITH g AS (${LOCK_LIVE_GRANT}),
  r AS (UPDATE tokens SET replaced_at = $20::bigint, replaced_by = $21::text
    WHERE jti = $22::text AND revoked_at IS NULL AND replaced_at IS NULL AND EXISTS (SELECT 1 FROM g) RETURNING 1),
  ins AS (INSERT INTO tokens (${TOKEN_INSERT_COLUMNS}) SELECT * FROM ${UNNEST_TOKENS} WHERE EXISTS (SELECT 1 FROM r) RETURNING 1)
  SELECT EXISTS (SELECT 1 FROM r) AS rotated`;

/** The grant lock inside a rotation transaction (the grace case): $1 the grant. */
export const LOCK_LIVE_GRANT_TX = 'SELECT 1 FROM grants WHERE grant_id = $1 AND revoked_at IS NULL FOR SHARE';

/** Tokens of the rotation's transaction ($1–$18), in a grant that exists. */
export const INSERT_GRANT_TOKENS = `INSERT INTO tokens (${TOKEN_INSERT_COLUMNS}) SELECT * FROM ${UNNEST_TOKENS}`;

/**
 * The first statement of every grant revocation: marks the grant ($2) revoked at $1 (kept if it
 * was already), taking its row lock. It waits for the mints under way, so that the statement that
 * follows it in the same transaction, with a snapshot of its own, sees what they inserted.
 */
export const LOCK_REVOKED_GRANT = 'UPDATE grants SET revoked_at = coalesce(revoked_at, $1) WHERE grant_id = $2';

/** {@link LOCK_REVOKED_GRANT} for the grant of the token $2, whose id it returns as "grantId". */
export const LOCK_REVOKED_GRANT_OF_TOKEN = `UPDATE grants SET revoked_at = coalesce(revoked_at, $1)
  WHERE grant_id = (SELECT grant_id FROM tokens WHERE jti = $2) RETURNING grant_id AS "grantId"`;

/** The parameters of {@link INSERT_TOKENS}: column by column. */
export function tokenColumns(tokens: readonly TokenRecord[]): unknown[][] {
  const column = <K extends keyof TokenRecord>(key: K) => tokens.map((t) => t[key]);
  return [
    column('jti'), column('digest'), column('type'), column('grantId'), column('clientId'), column('username'), column('sub'),
    column('scope'), column('audience'), column('orgId'), column('node'), column('issuedAt'), column('notBefore'),
    column('expiresAt'), column('revokedAt'), column('replacedAt'), column('replacedBy'), tokens.map((t) => t.jkt ?? null),
  ];
}

/**
 * Every unrevoked token of the grant $2 at $1 (after {@link LOCK_REVOKED_GRANT}), with its audit
 * line ($3–$8 from {@link auditParams}; $9 false for none) and its event ($11–$13, event-writes.ts) in
 * the same statement: both when a token changed, their count then being how many; or, with $10,
 * always, the count as given (the grant's token was revoked first, in the same transaction).
 * Answers how many tokens changed (n).
 */
export const REVOKE_GRANT = `WITH g AS (UPDATE tokens SET revoked_at = $1 WHERE grant_id = $2 AND revoked_at IS NULL RETURNING 1),
  changed AS (SELECT count(*) AS n FROM g),
  a AS (${insertAudit(auditAt(3, 'CASE WHEN $10::bool THEN $7::bigint ELSE changed.n END'), 'FROM changed WHERE $9::bool AND ($10::bool OR changed.n > 0)')}),
  ${oneEventCtes(11, '$10::bool OR (SELECT n FROM changed) > 0')}
  SELECT n::int AS n FROM changed`;

/** The parameters of {@link REVOKE_GRANT}. */
export function revokeGrantParams(at: number, grantId: string, audit: AuditEntry | undefined, always: boolean, event: RevocationEvent | undefined): unknown[] {
  return [at, grantId, ...optionalAudit(audit), always, ...eventParams(event)];
}

/** One token ($2) revoked at $1 if it is not yet. */
export const REVOKE_ONE = 'UPDATE tokens SET revoked_at = $1 WHERE jti = $2 AND revoked_at IS NULL';

/**
 * One token ($2) revoked at $1 if it is not yet, with its audit line ($3–$9, {@link optionalAudit})
 * and its event ($10–$12, event-writes.ts) only then. Answers whether it revoked it.
 */
export const REVOKE_ONE_LOGGED = `WITH r AS (UPDATE tokens SET revoked_at = $1 WHERE jti = $2 AND revoked_at IS NULL RETURNING 1),
  a AS (${insertAudit(auditAt(3), 'WHERE $9::bool AND EXISTS (SELECT 1 FROM r)')}),
  ${oneEventCtes(10, 'EXISTS (SELECT 1 FROM r)')}
  SELECT EXISTS (SELECT 1 FROM r) AS revoked`;

/**
 * Single-token revocations that arrived together (revokeToken without cascade), in one statement
 * and so one commit: $1 the jtis (distinct), $2 their instants, their audit lines ($3–$8, one
 * per token; $9 false where there is none) and their events ($10–$12: id, at, payload; null where
 * there is none). Each token is revoked if it is not yet, and its audit line and event written
 * only then; the jtis this statement revoked come back.
 */
export const REVOKE_TOKENS = `WITH q AS (
    SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[], $9::bool[],
        $10::text[], $11::bigint[], $12::text[])
      WITH ORDINALITY AS x (jti, at, audit_at, actor, action, target, count, detail, logged, event_id, event_at, payload, i)),
  r AS (UPDATE tokens t SET revoked_at = q.at FROM q WHERE t.jti = q.jti AND t.revoked_at IS NULL RETURNING t.jti),
  a AS (${insertAudit(
    { at: 'q.audit_at', actor: 'q.actor', action: 'q.action', target: 'q.target', count: 'q.count', detail: 'q.detail' },
    'FROM q JOIN r ON r.jti = q.jti WHERE q.logged ORDER BY q.i',
  )}),
  ${outboxCtes('SELECT q.event_id, q.event_at, q.payload FROM q JOIN r ON r.jti = q.jti ORDER BY q.i')}
  SELECT jti FROM r`;

/**
 * findClientAndToken for reads that arrived together, in one statement and one snapshot: $1 the
 * client ids, $2 the digests (null: no token wanted). One row of two JSON values: `clients`, each
 * client named once by its id, and `tokens`, the token of each pair (null: none), in their order;
 * each record under its own field names. One JSON value per batch rather than two per pair: a
 * third less of the server's work per read, and a busy batch names one client many times. The
 * statement is a function of the schema (migration 7), so that it is planned once per connection.
 */
export const FIND_CLIENTS_AND_TOKENS = 'SELECT r_clients AS clients, r_tokens AS tokens FROM find_clients_and_tokens($1::text[], $2::text[])';

/** The one row of {@link FIND_CLIENTS_AND_TOKENS}. */
export interface ClientsAndTokensRow {
  clients: Record<string, ClientRecord> | null;
  tokens: (TokenRecord | null)[] | null;
}

/** The audit trail's statements (audit-statements.ts), beside the rest of the store's SQL. */
export { auditAt, auditParams, countedAuditAt, countedAuditParams, INSERT_AUDIT, insertAudit, COUNT_AUDIT, LIST_AUDIT, optionalAudit, type AuditValues } from './audit-statements.js';
/** The statements built per call, from a filter or a bulk selector (token-queries.ts). */
export { bulkGrantBatch, bulkRemainder, bulkSweep, countTokensQuery, listTokensQuery, revocableQuery, TOKEN_COLUMNS, type Where } from './token-queries.js';
/** The purges' and counts' statements (maintenance-statements.ts). */
export { FIRST_TUPLE, PURGE_AUDIT, PURGE_BATCH, PURGE_GRANTS, PURGEABLE_SQL, STATS } from './maintenance-statements.js';
