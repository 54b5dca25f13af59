import type { AuditEntry, BulkSelector, RevocationEvent, TokenFilter, TokenState } from '../store.js';
import { eventParams, oneEventCtes } from './event-writes.js';
import { countedAuditAt, countedAuditParams, insertAudit } from './audit-statements.js';

/*
 * The token reads' and bulk revocations' SQL that is built per call, from a token filter or a bulk
 * selector, its parameters numbered as it goes (statements.ts holds the fixed statements).
 */

/** A token row under the record's own names (quoted aliases, as statements.ts says of every row). */
export const TOKEN_COLUMNS = `jti, digest, type, grant_id AS "grantId", client_id AS "clientId", username, sub, scope, audience,
  org_id AS "orgId", node, issued_at AS "issuedAt", not_before AS "notBefore", expires_at AS "expiresAt",
  revoked_at AS "revokedAt", replaced_at AS "replacedAt", replaced_by AS "replacedBy", jkt`;

/**
 * The last look of a bulk revocation, once a batch from the first grant found the last ones:
 * whether any grant the selector names is still unrevoked (`more`: one came in meanwhile), in a
 * snapshot of its own.
 */
export function bulkRemainder(selector: Exclude<BulkSelector, { jti: string }>): Where {
  const where = selectorWhere(selector, []);
  return { sql: `SELECT EXISTS (SELECT 1 FROM grants WHERE revoked_at IS NULL AND ${where.sql}) AS more`, params: where.params };
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
 * With an audit entry, its line is written when a token changed, its count that number; with an
 * event, the event too (event-writes.ts), in the same statement. Answers
 * how many tokens it found live (`found`), the greatest tuple among them (`last`), and how many
 * it revoked (`n`: fewer when a concurrent statement revoked or moved one meanwhile).
 */
export function bulkSweep(selector: Exclude<BulkSelector, { jti: string }>, at: number, limit: number, after: string | null, audit: AuditEntry | undefined, event?: RevocationEvent): Where {
  const where = selectorWhere(selector, [at]);
  const k = where.params.length;
  const live = `revoked_at IS NULL AND expires_at > $1 AND ${where.sql}`;
  const scan = after === null ? `${live} AND $${k + 2}::tid IS NULL` : `ctid > $${k + 2}::tid AND (${live}) IS TRUE`;
  return {
    sql: `WITH s AS (SELECT ctid FROM tokens WHERE ${scan} LIMIT $${k + 1}),
      u AS (UPDATE tokens SET revoked_at = $1 WHERE ctid = ANY (ARRAY(SELECT ctid FROM s)) AND ${live} RETURNING 1),
      a AS (${insertAudit(countedAuditAt(k + 3, 'count(*)'), `FROM u WHERE $${k + 8}::bool HAVING count(*) > 0`)}),
      ${oneEventCtes(k + 9, 'EXISTS (SELECT 1 FROM u)')}
      SELECT (SELECT count(*) FROM s)::int AS found, (SELECT max(ctid) FROM s)::text AS last, (SELECT count(*) FROM u)::int AS n`,
    params: [...where.params, limit, after, ...countedAuditParams(audit), ...eventParams(event)],
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
