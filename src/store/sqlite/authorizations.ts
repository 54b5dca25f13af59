import type Database from 'better-sqlite3';
import type { AuditEntry, AuthorizationKey, AuthorizationRecord, AuthorizationStore, IssuedCode, LoginDecision, RedeemOutcome, TokenRecord } from '../store.js';
import type { Trail } from '../trail.js';

/*
 * The authorization code flow's requests in the SQLite store (ports/authorizations.ts; the table
 * is migration 6's). Every step is one conditional UPDATE inside the group commit's BEGIN
 * IMMEDIATE (group-commit.ts): writers take turns on the file, whatever process they run in, so
 * of two racing answers, code issues or redemptions exactly one sees its row change.
 */

// Rows come back under the record's own names, as the token and client statements' do.
const COLUMNS = `id, challenge_digest AS challengeDigest, browser_digest AS browserDigest, client_id AS clientId,
  redirect_uri AS redirectUri, redirect_uri_sent AS redirectUriSent, scope, state, code_challenge AS codeChallenge,
  created_at AS createdAt, expires_at AS expiresAt, status, decided_at AS decidedAt, verifier_digest AS verifierDigest,
  subject, username, granted_scope AS grantedScope, error, error_description AS errorDescription, code_digest AS codeDigest,
  code_expires_at AS codeExpiresAt, grant_id AS grantId, redeemed_at AS redeemedAt, dpop_jkt AS dpopJkt`;

/**
 * When a request ended: its challenge's expiry, or its code's when that is later (the rule of
 * memory/authorizations.ts `ended`). Spelled as the index authorizations_ended is, so the purge reads that index.
 */
const ENDED_AT = 'max(expires_at, coalesce(code_expires_at, 0))';

/** A row of the statements below: the flag as 0 or 1 (STRICT tables have no booleans). */
type AuthorizationRow = Omit<AuthorizationRecord, 'redirectUriSent'> & { redirectUriSent: number };

function prepare(db: Database.Database) {
  const p = (sql: string) => db.prepare(sql);
  return {
    insert: p(`INSERT INTO authorizations (id, challenge_digest, browser_digest, client_id, redirect_uri, redirect_uri_sent, scope, state,
        code_challenge, created_at, expires_at, status, decided_at, verifier_digest, subject, username, granted_scope, error,
        error_description, code_digest, code_expires_at, grant_id, redeemed_at, dpop_jkt)
      VALUES (@id, @challengeDigest, @browserDigest, @clientId, @redirectUri, @redirectUriSent, @scope, @state,
        @codeChallenge, @createdAt, @expiresAt, @status, @decidedAt, @verifierDigest, @subject, @username, @grantedScope, @error,
        @errorDescription, @codeDigest, @codeExpiresAt, @grantId, @redeemedAt, @dpopJkt)`),
    byChallenge: p(`SELECT ${COLUMNS} FROM authorizations WHERE challenge_digest = ?`),
    byVerifier: p(`SELECT ${COLUMNS} FROM authorizations WHERE verifier_digest = ?`),
    byCode: p(`SELECT ${COLUMNS} FROM authorizations WHERE code_digest = ?`),
    // "A challenge is answered once" (contract 5): only a pending request, before its expiry.
    decide: p(`UPDATE authorizations SET status = @status, decided_at = @at, verifier_digest = @verifierDigest, subject = @subject,
        username = @username, granted_scope = @grantedScope, error = @error, error_description = @errorDescription
      WHERE id = @id AND status = 'pending' AND @at < expires_at`),
    // RFC 6749 §4.1.2: one code per accepted request, before the request's expiry.
    issue: p(`UPDATE authorizations SET code_digest = @codeDigest, code_expires_at = @expiresAt, grant_id = @grantId
      WHERE id = @id AND status = 'accepted' AND code_digest IS NULL AND @at < expires_at`),
    // RFC 6749 §4.1.2: "The client MUST NOT use the authorization code more than once."
    redeem: p('UPDATE authorizations SET redeemed_at = @at WHERE code_digest = @codeDigest AND redeemed_at IS NULL AND @at < code_expires_at'),
    redeemedAt: p('SELECT redeemed_at FROM authorizations WHERE code_digest = ?').pluck(true),
    purge: p(`DELETE FROM authorizations WHERE rowid IN (SELECT rowid FROM authorizations WHERE ${ENDED_AT} < @before LIMIT @limit)`),
  };
}

function fromRow(row: AuthorizationRow | undefined): AuthorizationRecord | null {
  return row === undefined ? null : { ...row, redirectUriSent: row.redirectUriSent === 1 };
}

/** The store's write and read steps, and the tokens and audit line a redemption writes (as insertTokens and the audit do). */
export interface AuthorizationSteps {
  write<T>(step: () => T): Promise<T>;
  run<T>(step: () => T): T;
  writeGrant(tokens: TokenRecord[], audit: AuditEntry | undefined): void;
}

/** The AuthorizationStore of {@link SqliteStore} (it forwards to this: forward-authorizations.ts), over its own statements. */
export class SqliteAuthorizations implements AuthorizationStore {
  private readonly st: ReturnType<typeof prepare>;

  constructor(
    db: Database.Database,
    private readonly steps: AuthorizationSteps,
  ) {
    this.st = prepare(db);
  }

  createAuthorization(a: AuthorizationRecord): Promise<void> {
    return this.steps.write(() => {
      this.st.insert.run({ ...a, redirectUriSent: a.redirectUriSent ? 1 : 0 });
    });
  }

  async findAuthorization(key: AuthorizationKey): Promise<AuthorizationRecord | null> {
    return this.steps.run(() => {
      const [statement, digest] =
        'challengeDigest' in key ? [this.st.byChallenge, key.challengeDigest] : 'verifierDigest' in key ? [this.st.byVerifier, key.verifierDigest] : [this.st.byCode, key.codeDigest];
      return fromRow(statement.get(digest) as AuthorizationRow | undefined);
    });
  }

  decideAuthorization(id: string, decision: LoginDecision, at: number): Promise<boolean> {
    const accepted = decision.status === 'accepted' ? decision : undefined;
    const rejected = decision.status === 'rejected' ? decision : undefined;
    const params = {
      id,
      at,
      status: decision.status,
      verifierDigest: decision.verifierDigest,
      subject: accepted?.subject ?? null,
      username: accepted?.username ?? null,
      grantedScope: accepted?.grantedScope ?? null,
      error: rejected?.error ?? null,
      errorDescription: rejected?.errorDescription ?? null,
    };
    return this.steps.write(() => this.st.decide.run(params).changes === 1);
  }

  issueAuthorizationCode(id: string, code: IssuedCode, at: number): Promise<boolean> {
    return this.steps.write(() => this.st.issue.run({ id, at, ...code }).changes === 1);
  }

  /**
   * One write step, so one transaction: the conditional UPDATE decides, and only the caller that
   * changed the row writes the grant; should that fail, the step's savepoint undoes the UPDATE too.
   */
  redeemAuthorizationCode(codeDigest: string, at: number, tokens: TokenRecord[], trail: Trail): Promise<RedeemOutcome> {
    return this.steps.write((): RedeemOutcome => {
      if (this.st.redeem.run({ codeDigest, at }).changes === 1) {
        this.steps.writeGrant(tokens, trail.audit);
        return 'redeemed';
      }
      const redeemedAt = this.st.redeemedAt.get(codeDigest) as number | null | undefined;
      return redeemedAt === undefined || redeemedAt === null ? 'invalid' : 'used';
    });
  }

  purgeAuthorizations(before: number, limit: number): Promise<number> {
    return this.steps.write(() => this.st.purge.run({ before, limit: Math.max(0, limit) }).changes);
  }
}
