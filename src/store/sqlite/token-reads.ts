import type { BulkSelector, ClientAndToken, TokenFilter, TokenRecord } from '../store.js';
import { selectorKind, tokenFromRow } from './statements.js';
import { SqliteClientStore } from './clients.js';
import type { TokenReads } from '../store.js';

/** The SQLite store's token reads (ports/token-reads.ts). */
export abstract class SqliteTokenReads extends SqliteClientStore implements TokenReads {
  /**
   * The request path of all three endpoints, batched (read-batcher.ts): the calls made during one
   * turn of the event loop are answered together in ONE read transaction, whose first read,
   * `PRAGMA data_version`, tells the row cache (row-cache.ts) whether anybody has committed since
   * the rows it keeps were read. Each answer reflects every commit made before its request arrived.
   */
  findClientAndToken(clientId: string, digest: string | null): Promise<ClientAndToken> {
    if (this.closed) return Promise.reject(new Error(`the store ${this.location} is closed`));
    return this.reads.read({ clientId, digest });
  }

  async findTokenByDigest(digest: string): Promise<TokenRecord | null> {
    return this.run(() => tokenFromRow(this.st.byDigest.get(digest) as unknown[] | undefined));
  }

  async findTokenByJti(jti: string): Promise<TokenRecord | null> {
    return this.run(() => tokenFromRow(this.st.byJti.get(jti) as unknown[] | undefined));
  }

  async scanTokens(afterJti: string | null, limit: number): Promise<TokenRecord[]> {
    return this.run(() => {
      const rows = (afterJti === null ? this.st.scanFirst.all(Math.max(0, limit)) : this.st.scanAfter.all(afterJti, Math.max(0, limit))) as unknown[][];
      return rows.map((row) => tokenFromRow(row)!);
    });
  }

  async findTokensByJti(jtis: readonly string[]): Promise<TokenRecord[]> {
    if (jtis.length === 0) return [];
    return this.run(() => (this.st.byJtis.all(JSON.stringify(jtis)) as unknown[][]).map((row) => tokenFromRow(row)!));
  }

  async listTokens(filter: TokenFilter): Promise<TokenRecord[]> {
    return this.run(() => this.listing.list(filter));
  }

  async countTokens(filter: TokenFilter): Promise<number> {
    return this.run(() => this.listing.count(filter));
  }

  async countRevocable(selector: BulkSelector, now: number): Promise<number> {
    return this.run(() => (this.st.bulk[selectorKind(selector)].count.get({ ...selector, at: now }) as { n: number }).n);
  }
}
