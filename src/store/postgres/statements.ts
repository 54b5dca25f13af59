import type { AuditEntry, BulkSelector, ClientRecord, RevocationEvent, TokenFilter, TokenRecord, TokenState } from '../store.js';
import { eventParams, oneEventCtes, outboxCtes } from './event-writes.js';
import { auditAt, countedAuditAt, countedAuditParams, insertAudit, optionalAudit } from './audit-statements.js';

/*
 * The PostgreSQL store's SQL, beside the SQLite store's same statements. Rows come back under the
 * records' own names (quoted aliases), so no mapping code can drift from the schema; BIGINT
 * columns arrive as numbers through the pool's type parser (pool.ts).
 */

export const TOKEN_COLUMNS = `jti, digest, type, grant_id AS "grantId", client_id AS "clientId", username, sub, scope, audience,
  org_id AS "orgId", node, issued_at AS "issuedAt", not_before AS "notBefore", expires_at AS "expiresAt",
  revoked_at AS "revokedAt", replaced_at AS "replacedAt", replaced_by AS "replacedBy"`;
export const CLIENT_COLUMNS = `id, name, secret_hash AS "secretHash", scope, org_id AS "orgId", audience, access_ttl_ms AS "accessTtlMs",
  refresh_ttl_ms AS "refreshTtlMs", created_at AS "createdAt", secret_updated_at AS "secretUpdatedAt",
  redirect_uris AS "redirectUris", grant_types AS "grantTypes", login_provider AS "loginProvider"`;

const TOKEN_INSERT_COLUMNS = `jti, digest, type, grant_id, client_id, username, sub, scope, audience, org_id, node,
    issued_at, not_before, expires_at, revoked_at, replaced_at, replaced_by`;
/** {@link tokenColumns}' seventeen array parameters, $1 to $17, typed. */
const TOKEN_ARRAYS = `$1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
    $10::text[], $11::text[], $12::bigint[], $13::bigint[], $14::bigint[], $15::bigint[], $16::bigint[], $17::text[]`;
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
const LOCK_LIVE_GRANT = 'SELECT 1 FROM grants WHERE grant_id = $18 AND revoked_at IS NULL FOR SHARE';

/**
 * insertMintedAccess for any number of mints in one statement (one round trip, one plan, one
 * commit): row i of the access tokens ($1–$17) goes in only if its grant is unrevoked, under the
 * grant lock, its refresh token ($18[i]) is current, and the grant has fewer than $20[i] tokens
 * issued after $19[i] (no limit: null), counted from the (grant_id, issued_at) index, plus the
 * ones before it in this statement for the same grant. The grant locks are taken in grant_id
 * order, so that two batches never wait for each other in a cycle. One row per mint, in order:
 * whether it was inserted, whether its refresh token exists, and whether the limit alone stopped it.
 */
export const MINT_ACCESS = `WITH q AS (SELECT * FROM unnest(${TOKEN_ARRAYS}, $18::text[], $19::bigint[], $20::int[])
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
 * rotateRefreshToken without grace, in one statement: under the grant lock ($18), the old token
 * ($21) is marked replaced at $19 by $20, if it is still current, and only then are the new tokens
 * ($1–$17) inserted. A concurrent rotation of the same token waits for the old token's row, then
 * finds it replaced and writes nothing.
 */
export const ROTATE = `WITH g AS (${LOCK_LIVE_GRANT}),
  r AS (UPDATE tokens SET replaced_at = $19::bigint, replaced_by = $20::text
    WHERE jti = $21::text AND revoked_at IS NULL AND replaced_at IS NULL AND EXISTS (SELECT 1 FROM g) RETURNING 1),
  ins AS (INSERT INTO tokens (${TOKEN_INSERT_COLUMNS}) SELECT * FROM ${UNNEST_TOKENS} WHERE EXISTS (SELECT 1 FROM r) RETURNING 1)
  SELECT EXISTS (SELECT 1 FROM r) AS rotated`;

/** The grant lock inside a rotation transaction (the grace case): $1 the grant. */
export const LOCK_LIVE_GRANT_TX = 'SELECT 1 FROM grants WHERE grant_id = $1 AND revoked_at IS NULL FOR SHARE';

/** Tokens of the rotation's transaction ($1–$17), in a grant that exists. */
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
    column('expiresAt'), column('revokedAt'), column('replacedAt'), column('replacedBy'),
  ];
}

/** Purgeable: expired, or revoked, before $1 (a replaced token is neither, so it stays). */
export const PURGEABLE_SQL = 'expires_at < $1 OR revoked_at < $1';

/**
 * Deletes up to $2 purgeable tokens by primary key; SKIP LOCKED lets purges on several nodes
 * share the work, and never waits on a token a request is revoking or rotating right now.
 * Expired ones come from the expiry index; no index covers revoked_at (revocations are HOT
 * updates, migration 4), so the revoked but unexpired ones are found by a scan of the pages
 * after the tuple $3 (a TID range scan: each batch goes on where the last stopped, never
 * re-reading what it has purged). With an audit entry ($4–$8: $4 false for none), it is written
 * with the deletion. Answers how many were deleted (n), how many the scan was asked for
 * (wanted) and found (found), and the last tuple it found (last).
 */
export const PURGE_BATCH = `WITH e AS (SELECT jti FROM tokens WHERE expires_at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED),
  want AS (SELECT $2 - count(*) AS n FROM e),
  r AS (SELECT jti, ctid FROM tokens WHERE ctid > $3::tid AND revoked_at < $1 AND expires_at >= $1
    LIMIT (SELECT n FROM want) FOR UPDATE SKIP LOCKED),
  d AS (DELETE FROM tokens WHERE jti IN (SELECT jti FROM e UNION ALL SELECT jti FROM r) RETURNING 1),
  logged AS (${insertAudit(countedAuditAt(5, 'count(*)'), 'FROM d WHERE $4 HAVING count(*) > 0')})
  SELECT (SELECT count(*) FROM d)::int AS n, (SELECT n FROM want)::int AS wanted, (SELECT count(*) FROM r)::int AS found,
    (SELECT max(ctid) FROM r)::text AS last`;

/**
 * Grant records with no token left, among the next $3 grants after $2 in grant order, created
 * before $1: deleted, with the audit line ($4–$8 as countedAuditParams, $9 false for none) when
 * any was. SKIP LOCKED: a grant locked by a revocation or a mint right now is left for next time.
 * Answers how many were deleted (n), looked at (scanned), and the last grant looked at (last).
 */
export const PURGE_GRANTS = `WITH scanned AS (SELECT grant_id FROM grants WHERE grant_id > $2 ORDER BY grant_id LIMIT $3),
  empty AS (SELECT g.grant_id FROM grants g WHERE g.grant_id IN (SELECT grant_id FROM scanned) AND g.created_at < $1
    AND NOT EXISTS (SELECT 1 FROM tokens t WHERE t.grant_id = g.grant_id) FOR UPDATE OF g SKIP LOCKED),
  d AS (DELETE FROM grants WHERE grant_id IN (SELECT grant_id FROM empty) RETURNING 1),
  logged AS (${insertAudit(countedAuditAt(4, 'count(*)'), 'FROM d WHERE $9 HAVING count(*) > 0')})
  SELECT (SELECT count(*) FROM d)::int AS n, (SELECT count(*) FROM scanned)::int AS scanned, (SELECT max(grant_id) FROM scanned) AS last`;

/**
 * The audit trail's retention: up to $2 of the oldest lines written before $1 (by the primary
 * key, lines being appended in time order), and the line telling of it ($3–$7 as
 * countedAuditParams, $8 false for none) when any was deleted.
 */
export const PURGE_AUDIT = `WITH d AS (DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE at < $1 ORDER BY id LIMIT $2) RETURNING 1),
  logged AS (${insertAudit(countedAuditAt(3, 'count(*)'), 'FROM d WHERE $8 HAVING count(*) > 0')})
  SELECT count(*)::int AS n FROM d`;

/** The tuple before every other: a scan after it reads the whole table. */
export const FIRST_TUPLE = '(0,0)';

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

/**
 * The last look of a bulk revocation, once a batch from the first grant found the last ones:
 * whether any grant the selector names is still unrevoked (`more`: one came in meanwhile), in a
 * snapshot of its own; if none is, the revocation's event is written (event-writes.ts).
 */
export function bulkRemainder(selector: Exclude<BulkSelector, { jti: string }>, event: RevocationEvent | undefined): Where {
  const where = selectorWhere(selector, []);
  return {
    sql: `WITH remaining AS (SELECT EXISTS (SELECT 1 FROM grants WHERE revoked_at IS NULL AND ${where.sql}) AS more),
      ${oneEventCtes(where.params.length + 1, 'NOT (SELECT more FROM remaining)')}
      SELECT more FROM remaining`,
    params: [...where.params, ...eventParams(event)],
  };
}

/**
 * One step of a bulk revocation's token sweep: up to `limit` live tokens the selector names are
 * revoked at $1, each updated by its tuple id and checked again in its newest version.
 * - From the start (`after` null), through the indexes, as the planner likes: a small selector is
 *   done in this one step.
 * - After the tuple `after`, a TID range scan on from it: the tokens in the order the table holds
 *   them, so each step writes the pages that follow the last step's (a tenth of the buffers that
 *   revoking them grant by grant, in random order across the table, touched). `IS TRUE` keeps the
 *   conditions out of every index, whatever the statistics say: right after a bulk load, without
 *   them, PostgreSQL chose the client and expiry indexes and read all of both at every step
 *   (1.8–2.1 s instead of 0.85 s for 100,000 tokens).
 * With an audit entry, its line is written when a token changed, its count that number. Answers
 * how many tokens it found live (`found`), the greatest tuple among them (`last`), and how many
 * it revoked (`n`: fewer when a concurrent statement revoked or moved one meanwhile).
 */
export function bulkSweep(selector: Exclude<BulkSelector, { jti: string }>, at: number, limit: number, after: string | null, audit: AuditEntry | undefined): Where {
  const where = selectorWhere(selector, [at]);
  const k = where.params.length;
  const live = `revoked_at IS NULL AND expires_at > $1 AND ${where.sql}`;
  const scan = after === null ? `${live} AND $${k + 2}::tid IS NULL` : `ctid > $${k + 2}::tid AND (${live}) IS TRUE`;
  return {
    sql: `WITH s AS (SELECT ctid FROM tokens WHERE ${scan} LIMIT $${k + 1}),
      u AS (UPDATE tokens SET revoked_at = $1 WHERE ctid = ANY (ARRAY(SELECT ctid FROM s)) AND ${live} RETURNING 1),
      a AS (${insertAudit(countedAuditAt(k + 3, 'count(*)'), `FROM u WHERE $${k + 8}::bool HAVING count(*) > 0`)})
      SELECT (SELECT count(*) FROM s)::int AS found, (SELECT max(ctid) FROM s)::text AS last, (SELECT count(*) FROM u)::int AS n`,
    params: [...where.params, limit, after, ...countedAuditParams(audit)],
  };
}

/**
 * One batch of a bulk revocation of a user's or a client's grants: up to `limit` unrevoked grants
 * after the grant id `after` (null: from the first) are locked and marked revoked at $1, in
 * grant_id order (so that two bulk revocations never wait for each other in a cycle), read in
 * that order from the (username | client_id, grant_id) index: no sort, and nothing before
 * `after` read again. Each is updated by its tuple id (the row locked is its newest version),
 * not by a join, which PostgreSQL planned as a hash of the whole table. Answers how many it
 * revoked (`n`) and the greatest grant id (`last`). Their tokens are left to the sweep
 * ({@link bulkSweep}): once revoked, a grant mints none.
 */
export function bulkGrantBatch(selector: Exclude<BulkSelector, { jti: string }>, at: number, limit: number, after: string | null): Where {
  const where = selectorWhere(selector, [at]);
  const n = `$${where.params.length + 1}`;
  const from = `$${where.params.length + 2}`;
  return {
    sql: `WITH s AS (SELECT ctid, grant_id FROM grants WHERE revoked_at IS NULL AND ${where.sql} AND (${from}::text IS NULL OR grant_id > ${from}::text)
        ORDER BY grant_id LIMIT ${n} FOR UPDATE),
      u AS (UPDATE grants SET revoked_at = $1 WHERE ctid = ANY (ARRAY(SELECT ctid FROM s)) RETURNING 1)
      SELECT (SELECT count(*) FROM u)::int AS n, (SELECT max(grant_id) FROM s) AS last`,
    params: [...where.params, limit, after],
  };
}

/** tokenState() of store.ts as one condition per state, so that each can use an index. */
function stateCondition(state: TokenState, now: () => string): string {
  if (state === 'revoked') return '(revoked_at IS NOT NULL OR replaced_at IS NOT NULL)';
  return `revoked_at IS NULL AND replaced_at IS NULL AND expires_at ${state === 'active' ? '>' : '<='} ${now()}`;
}

/** Counts of tokens by type and state (all, or one client's: $2), clients, and the oldest expiry: one statement, one snapshot. */
export const STATS = `WITH by_state AS (
    SELECT type, CASE WHEN revoked_at IS NOT NULL OR replaced_at IS NOT NULL THEN 'revoked'
      WHEN expires_at <= $1 THEN 'expired' ELSE 'active' END AS state, count(*) AS n
    FROM tokens WHERE ($2::text IS NULL OR client_id = $2) GROUP BY 1, 2)
  SELECT (SELECT count(*) FROM clients) AS clients,
    (SELECT min(expires_at) FROM tokens WHERE expires_at <= $1 AND ($2::text IS NULL OR client_id = $2)) AS "oldestExpiredAt",
    (SELECT coalesce(json_agg(by_state), '[]') FROM by_state) AS "byState"`;

/** Newest first; `target` is space-separated words, and the filters match whole words. */
/** The audit filters (AuditFilter) as $1–$4: since, jti, client id, actions to leave out. */
const AUDIT_CONDITIONS = `($1::bigint IS NULL OR at >= $1) AND ($2::text IS NULL OR $2 = ANY (string_to_array(target, ' ')))
    AND ($3::text IS NULL OR actor = $3 OR 'client:' || $3 = ANY (string_to_array(target, ' ')))
    AND ($4::text[] IS NULL OR NOT (action = ANY ($4)))`;

/** $5: only ids below it (the next page), $6: the limit. */
export const LIST_AUDIT = `SELECT id, at, actor, action, target, count, detail FROM audit
  WHERE ${AUDIT_CONDITIONS} AND ($5::bigint IS NULL OR id < $5)
  ORDER BY id DESC LIMIT $6`;

export const COUNT_AUDIT = `SELECT count(*)::int AS n FROM audit WHERE ${AUDIT_CONDITIONS}`;

/** A WHERE clause with its parameters, numbered from a given `$n`. */
export interface Where {
  sql: string;
  params: unknown[];
}

/** Collects conditions and numbers their parameters. */
class WhereBuilder {
  readonly conditions: string[] = [];
  readonly params: unknown[];

  constructor(initial: unknown[] = []) {
    this.params = [...initial];
  }

  /** The `$n` of a new parameter. */
  param(value: unknown): string {
    this.params.push(value);
    return `$${this.params.length}`;
  }

  add(condition: string): void {
    this.conditions.push(condition);
  }

  build(): Where {
    return { sql: this.conditions.length ? this.conditions.join(' AND ') : 'TRUE', params: this.params };
  }
}

/**
 * What a bulk revocation revokes, as `WITH` clauses and a condition on `tokens`, shared by the
 * count and the revocation so that the number an operator confirmed is what happens: every
 * live (unrevoked, unexpired at `$1`) token the selector names, or of a grant whose refresh
 * token it names. Candidates come from a UNION rather than an OR, so that both halves use an
 * index (an OR with a subquery scans the whole table, however few tokens a user has); liveness
 * is checked once, on the candidates, by primary key (inside the grant lookup, a planner
 * without statistics would intersect every lookup with the expiry index).
 */
export function revocableQuery(selector: BulkSelector, at: number): Where & { condition: string } {
  const where = selectorWhere(selector, [at]);
  const sql = `WITH selected AS (
      SELECT jti, type, grant_id FROM tokens WHERE revoked_at IS NULL AND expires_at > $1 AND ${where.sql}),
    candidates AS (
      SELECT jti FROM selected
      UNION
      SELECT t.jti FROM tokens t JOIN selected s ON s.type = 'refresh_token' AND t.grant_id = s.grant_id)`;
  return { sql, params: where.params, condition: 'revoked_at IS NULL AND expires_at > $1 AND jti IN (SELECT jti FROM candidates)' };
}

/** The tokens a bulk selector names; `$1` is left to the caller (the instant). */
function selectorWhere(selector: BulkSelector, initial: unknown[]): Where {
  const w = new WhereBuilder(initial);
  if ('jti' in selector) {
    w.add(`jti = ${w.param(selector.jti)}`);
  } else if ('username' in selector) {
    w.add(`username = ${w.param(selector.username)}`);
    if (selector.clientId !== undefined) w.add(`client_id = ${w.param(selector.clientId)}`);
  } else {
    w.add(`client_id = ${w.param(selector.clientId)}`);
  }
  return w.build();
}

/** countTokens: the conditions of listTokens, without limit and cursor. */
export function countTokensQuery(filter: TokenFilter): Where {
  const w = tokenConditions(filter);
  const where = w.build();
  return { sql: `SELECT count(*)::int AS n FROM tokens WHERE ${where.sql}`, params: w.params };
}

function tokenConditions(filter: TokenFilter): WhereBuilder {
  const w = new WhereBuilder();
  if (filter.clientId !== undefined) w.add(`client_id = ${w.param(filter.clientId)}`);
  if (filter.username !== undefined) w.add(`username = ${w.param(filter.username)}`);
  if (filter.type !== undefined) w.add(`type = ${w.param(filter.type)}`);
  if (filter.state !== undefined) w.add(stateCondition(filter.state, () => w.param(filter.now ?? Date.now())));
  return w;
}

/** listTokens: every filter field narrows; newest first, ties by jti in byte order (as SQLite). */
export function listTokensQuery(filter: TokenFilter): Where {
  const w = tokenConditions(filter);
  if (filter.after !== undefined) {
    const at = w.param(filter.after.issuedAt);
    w.add(`(issued_at < ${at} OR (issued_at = ${at} AND jti COLLATE "C" > ${w.param(filter.after.jti)}))`);
  }
  const where = w.build();
  const limit = w.param(filter.limit ?? null);
  return {
    sql: `SELECT ${TOKEN_COLUMNS} FROM tokens WHERE ${where.sql} ORDER BY issued_at DESC, jti COLLATE "C" LIMIT ${limit}`,
    params: w.params,
  };
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

/** The audit line's statements (audit-statements.ts), beside the rest of the store's SQL. */
export { auditAt, auditParams, countedAuditAt, countedAuditParams, INSERT_AUDIT, insertAudit, optionalAudit, type AuditValues } from './audit-statements.js';
