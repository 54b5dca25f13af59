import type { BulkSelector, ClientAndToken, TokenFilter, TokenRecord } from '../store.js';
import { countTokensQuery, listTokensQuery, revocableQuery, TOKEN_COLUMNS } from './statements.js';
import { PostgresClientStore } from './clients.js';
import type { TokenReads } from '../store.js';

/** The PostgreSQL store's token reads (ports/token-reads.ts). */
export abstract class PostgresTokenReads extends PostgresClientStore implements TokenReads {
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
}
