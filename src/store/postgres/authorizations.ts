import type { AuditEntry, AuthorizationKey, AuthorizationRecord, IssuedCode, LoginDecision, RedeemOutcome, TokenRecord } from '../store.js';
import type { Database } from './database.js';
import {
  authorizationParams,
  CODE_REDEEMED_AT,
  DECIDE_AUTHORIZATION,
  decisionParams,
  findAuthorizationQuery,
  INSERT_AUTHORIZATION,
  ISSUE_AUTHORIZATION_CODE,
  issueParams,
  PURGE_AUTHORIZATIONS,
  REDEEM_AUTHORIZATION_CODE,
} from './authorization-statements.js';
import { auditParams, INSERT_AUDIT, INSERT_TOKENS, tokenColumns } from './statements.js';

/** The AuthorizationStore methods of {@link PostgresStore} (ports/authorizations.ts), over authorization-statements.ts. */
export class PostgresAuthorizations {
  constructor(private readonly db: Database) {}

  async create(a: AuthorizationRecord): Promise<void> {
    await this.db.query(INSERT_AUTHORIZATION, authorizationParams(a));
  }

  async find(key: AuthorizationKey): Promise<AuthorizationRecord | null> {
    const { sql, params } = findAuthorizationQuery(key);
    return (await this.db.query<AuthorizationRecord>(sql, params)).rows[0] ?? null;
  }

  async decide(id: string, decision: LoginDecision, at: number): Promise<boolean> {
    return (await this.db.query(DECIDE_AUTHORIZATION, decisionParams(id, decision, at))).rowCount === 1;
  }

  async issueCode(id: string, code: IssuedCode, at: number): Promise<boolean> {
    return (await this.db.query(ISSUE_AUTHORIZATION_CODE, issueParams(id, code, at))).rowCount === 1;
  }

  /**
   * One transaction: the conditional UPDATE decides (a concurrent redemption waits for its row
   * lock, then finds the code redeemed), and only the one that changed the row inserts the grant's
   * tokens and the audit line after it. The statement that tells 'used' from 'invalid' has a
   * snapshot of its own, so it sees the redemption it waited for.
   */
  redeem(codeDigest: string, at: number, tokens: TokenRecord[], audit: AuditEntry | undefined): Promise<RedeemOutcome> {
    return this.db.transaction(async (db): Promise<RedeemOutcome> => {
      if ((await db.query(REDEEM_AUTHORIZATION_CODE, [codeDigest, at])).rowCount === 1) {
        if (tokens.length > 0) await db.query(INSERT_TOKENS, tokenColumns(tokens));
        if (audit) await db.query(INSERT_AUDIT, auditParams(audit));
        return 'redeemed';
      }
      const { rows } = await db.query<{ redeemedAt: number | null }>(CODE_REDEEMED_AT, [codeDigest]);
      return rows[0] === undefined || rows[0].redeemedAt === null ? 'invalid' : 'used';
    });
  }

  async purge(before: number, limit: number): Promise<number> {
    return (await this.db.query(PURGE_AUTHORIZATIONS, [before, Math.max(0, limit)])).rowCount ?? 0;
  }
}
