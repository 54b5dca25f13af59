import type { AuthorizationKey, AuthorizationRecord, AuthorizationStore, IssuedCode, LoginDecision, RedeemOutcome, TokenRecord } from '../store.js';
import type { Trail } from '../trail.js';
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

/** The AuthorizationStore of {@link PostgresStore} (it forwards to this: forward-authorizations.ts), over authorization-statements.ts. */
export class PostgresAuthorizations implements AuthorizationStore {
  constructor(private readonly db: Database) {}

  async createAuthorization(a: AuthorizationRecord): Promise<void> {
    await this.db.query(INSERT_AUTHORIZATION, authorizationParams(a));
  }

  async findAuthorization(key: AuthorizationKey): Promise<AuthorizationRecord | null> {
    const { sql, params } = findAuthorizationQuery(key);
    return (await this.db.query<AuthorizationRecord>(sql, params)).rows[0] ?? null;
  }

  async decideAuthorization(id: string, decision: LoginDecision, at: number): Promise<boolean> {
    return (await this.db.query(DECIDE_AUTHORIZATION, decisionParams(id, decision, at))).rowCount === 1;
  }

  async issueAuthorizationCode(id: string, code: IssuedCode, at: number): Promise<boolean> {
    return (await this.db.query(ISSUE_AUTHORIZATION_CODE, issueParams(id, code, at))).rowCount === 1;
  }

  /**
   * One transaction: the conditional UPDATE decides (a concurrent redemption waits for its row
   * lock, then finds the code redeemed), and only the one that changed the row inserts the grant's
   * tokens and the audit line after it. The statement that tells 'used' from 'invalid' has a
   * snapshot of its own, so it sees the redemption it waited for.
   */
  redeemAuthorizationCode(codeDigest: string, at: number, tokens: TokenRecord[], trail: Trail): Promise<RedeemOutcome> {
    const { audit } = trail;
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

  async purgeAuthorizations(before: number, limit: number): Promise<number> {
    return (await this.db.query(PURGE_AUTHORIZATIONS, [before, Math.max(0, limit)])).rowCount ?? 0;
  }
}
