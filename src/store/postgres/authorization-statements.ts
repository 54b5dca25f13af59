import type { AuthorizationKey, AuthorizationRecord, IssuedCode, LoginDecision } from '../store.js';

/*
 * The SQL of the authorization code flow's requests (ports/authorizations.ts; the table is
 * migration 8's). Each step is one conditional UPDATE: under READ COMMITTED a second writer of
 * the row waits for the first, then checks the WHERE again on the row's newest version, so of
 * two racing answers, code issues or redemptions exactly one changes the row.
 */

/** Rows under the record's own names, as the token and client statements' (statements.ts). */
const COLUMNS = `id, challenge_digest AS "challengeDigest", browser_digest AS "browserDigest", client_id AS "clientId",
  redirect_uri AS "redirectUri", redirect_uri_sent AS "redirectUriSent", scope, state, code_challenge AS "codeChallenge",
  created_at AS "createdAt", expires_at AS "expiresAt", status, decided_at AS "decidedAt", verifier_digest AS "verifierDigest",
  subject, username, granted_scope AS "grantedScope", error, error_description AS "errorDescription", code_digest AS "codeDigest",
  code_expires_at AS "codeExpiresAt", grant_id AS "grantId", redeemed_at AS "redeemedAt", dpop_jkt AS "dpopJkt"`;

/**
 * When a request ended: its challenge's expiry, or its code's when that is later (the rule of
 * memory/authorizations.ts `ended`). Spelled as the index authorizations_ended is, so the purge reads that index.
 */
const ENDED_AT = 'greatest(expires_at, coalesce(code_expires_at, 0))';

/** A new request, $1–$24 from {@link authorizationParams}. */
export const INSERT_AUTHORIZATION = `INSERT INTO authorizations (id, challenge_digest, browser_digest, client_id, redirect_uri, redirect_uri_sent,
    scope, state, code_challenge, created_at, expires_at, status, decided_at, verifier_digest, subject, username, granted_scope,
    error, error_description, code_digest, code_expires_at, grant_id, redeemed_at, dpop_jkt)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24)`;

/** The parameters of {@link INSERT_AUTHORIZATION}. */
export function authorizationParams(a: AuthorizationRecord): unknown[] {
  return [
    a.id, a.challengeDigest, a.browserDigest, a.clientId, a.redirectUri, a.redirectUriSent, a.scope, a.state, a.codeChallenge,
    a.createdAt, a.expiresAt, a.status, a.decidedAt, a.verifierDigest, a.subject, a.username, a.grantedScope, a.error,
    a.errorDescription, a.codeDigest, a.codeExpiresAt, a.grantId, a.redeemedAt, a.dpopJkt,
  ];
}

/** The request whose digest of this kind is $1. */
export function findAuthorizationQuery(key: AuthorizationKey): { sql: string; params: unknown[] } {
  const [column, digest] =
    'challengeDigest' in key ? ['challenge_digest', key.challengeDigest] : 'verifierDigest' in key ? ['verifier_digest', key.verifierDigest] : ['code_digest', key.codeDigest];
  return { sql: `SELECT ${COLUMNS} FROM authorizations WHERE ${column} = $1`, params: [digest] };
}

/** "A challenge is answered once" (contract 5): the request $1 if still pending and $3 is before its expiry. */
export const DECIDE_AUTHORIZATION = `UPDATE authorizations SET status = $2, decided_at = $3::bigint, verifier_digest = $4, subject = $5,
    username = $6, granted_scope = $7, error = $8, error_description = $9
  WHERE id = $1 AND status = 'pending' AND $3::bigint < expires_at`;

/** The parameters of {@link DECIDE_AUTHORIZATION}: the fields of the other answer are null. */
export function decisionParams(id: string, decision: LoginDecision, at: number): unknown[] {
  const accepted = decision.status === 'accepted' ? decision : undefined;
  const rejected = decision.status === 'rejected' ? decision : undefined;
  return [
    id, decision.status, at, decision.verifierDigest, accepted?.subject ?? null, accepted?.username ?? null,
    accepted?.grantedScope ?? null, rejected?.error ?? null, rejected?.errorDescription ?? null,
  ];
}

/** RFC 6749 §4.1.2: the one code of the accepted request $1, while $5 is before the request's expiry. */
export const ISSUE_AUTHORIZATION_CODE = `UPDATE authorizations SET code_digest = $2, code_expires_at = $3, grant_id = $4
  WHERE id = $1 AND status = 'accepted' AND code_digest IS NULL AND $5::bigint < expires_at`;

/** The parameters of {@link ISSUE_AUTHORIZATION_CODE}. */
export function issueParams(id: string, code: IssuedCode, at: number): unknown[] {
  return [id, code.codeDigest, code.expiresAt, code.grantId, at];
}

/**
 * RFC 6749 §4.1.2 ("The client MUST NOT use the authorization code more than once"): the code $1
 * redeemed at $2 if it is not yet and has not expired. A row comes back only to the one that did.
 */
export const REDEEM_AUTHORIZATION_CODE = `UPDATE authorizations SET redeemed_at = $2::bigint
  WHERE code_digest = $1 AND redeemed_at IS NULL AND $2::bigint < code_expires_at RETURNING 1`;

/** After a redemption that changed nothing: whether the code $1 exists and was redeemed ('used'). */
export const CODE_REDEEMED_AT = 'SELECT redeemed_at AS "redeemedAt" FROM authorizations WHERE code_digest = $1';

/**
 * Up to $2 requests that ended before $1. SKIP LOCKED lets purges on several nodes share the work
 * and never waits on a request being answered or redeemed right now.
 */
export const PURGE_AUTHORIZATIONS = `DELETE FROM authorizations WHERE id IN (
  SELECT id FROM authorizations WHERE ${ENDED_AT} < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`;
