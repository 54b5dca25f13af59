import type Database from 'better-sqlite3';
import type { TokenFilter, TokenRecord } from '../store.js';
import { countTokensSql, listTokensSql, type Statement } from './statements.js';

/**
 * listTokens and countTokens: a statement per filter shape, each prepared once (on first use),
 * so that each shape can use its own index.
 */
export class Listing {
  private readonly statements = new Map<string, Statement>();

  constructor(private readonly db: Database.Database) {}

  list(filter: TokenFilter): TokenRecord[] {
    const { after, ...rest } = filter;
    const params = { ...rest, now: filter.now ?? Date.now(), limit: filter.limit ?? -1, ...(after ? { afterAt: after.issuedAt, afterJti: after.jti } : {}) };
    return this.statement(listTokensSql(filter)).all(params) as TokenRecord[];
  }

  count(filter: TokenFilter): number {
    const { clientId, username, type, state } = filter;
    const params = Object.fromEntries(Object.entries({ clientId, username, type, state }).filter(([, v]) => v !== undefined));
    return (this.statement(countTokensSql(filter)).get({ ...params, ...(state !== undefined ? { now: filter.now ?? Date.now() } : {}) }) as { n: number }).n;
  }

  private statement(sql: string): Statement {
    let stmt = this.statements.get(sql);
    if (!stmt) this.statements.set(sql, (stmt = this.db.prepare(sql)));
    return stmt;
  }
}
