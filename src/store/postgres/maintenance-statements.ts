import { countedAuditAt, insertAudit } from './audit-statements.js';

/*
 * The purges' and counts' SQL (ports/maintenance.ts), beside the rest of the store's (statements.ts).
 */

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

/** Counts of tokens by type and state (all, or one client's: $2), clients, and the oldest expiry: one statement, one snapshot. */
export const STATS = `WITH by_state AS (
    SELECT type, CASE WHEN revoked_at IS NOT NULL OR replaced_at IS NOT NULL THEN 'revoked'
      WHEN expires_at <= $1 THEN 'expired' ELSE 'active' END AS state, count(*) AS n
    FROM tokens WHERE ($2::text IS NULL OR client_id = $2) GROUP BY 1, 2)
  SELECT (SELECT count(*) FROM clients) AS clients,
    (SELECT min(expires_at) FROM tokens WHERE expires_at <= $1 AND ($2::text IS NULL OR client_id = $2)) AS "oldestExpiredAt",
    (SELECT coalesce(json_agg(by_state), '[]') FROM by_state) AS "byState"`;
