import { tokenState, type BulkSelector, type ClientAndToken, type TokenFilter, type TokenRecord } from '../store.js';
import { MemoryClientStore } from './clients.js';
import { compare } from './store-core.js';
import type { TokenReads } from '../store.js';

/** The in-memory store's token reads (ports/token-reads.ts). */
export abstract class MemoryTokenReads extends MemoryClientStore implements TokenReads {
  async findTokenByDigest(digest: string): Promise<TokenRecord | null> {
    this.check();
    const jti = this.byDigest.get(digest);
    return jti ? this.copy(jti) : null;
  }

  async findTokenByJti(jti: string): Promise<TokenRecord | null> {
    this.check();
    return this.copy(jti);
  }

  async findClientAndToken(clientId: string, digest: string | null): Promise<ClientAndToken> {
    const [client, token] = await Promise.all([this.getClient(clientId), digest === null ? null : this.findTokenByDigest(digest)]);
    return { client, token };
  }

  async scanTokens(afterJti: string | null, limit: number): Promise<TokenRecord[]> {
    this.check();
    const jtis = [...this.tokens.keys()].filter((jti) => afterJti === null || compare(jti, afterJti) > 0).sort(compare);
    return jtis.slice(0, Math.max(0, limit)).map((jti) => this.copy(jti)!);
  }

  async findTokensByJti(jtis: readonly string[]): Promise<TokenRecord[]> {
    this.check();
    return [...new Set(jtis)].flatMap((jti) => this.copy(jti) ?? []);
  }

  async listTokens(filter: TokenFilter): Promise<TokenRecord[]> {
    this.check();
    const now = filter.now ?? Date.now();
    const out = [...this.tokens.values()]
      .filter((t) => filter.clientId === undefined || t.clientId === filter.clientId)
      .filter((t) => filter.username === undefined || t.username === filter.username)
      .filter((t) => filter.type === undefined || t.type === filter.type)
      .filter((t) => filter.state === undefined || tokenState(t, now) === filter.state)
      .sort((a, b) => b.issuedAt - a.issuedAt || compare(a.jti, b.jti))
      .filter((t) => !filter.after || t.issuedAt < filter.after.issuedAt || (t.issuedAt === filter.after.issuedAt && compare(t.jti, filter.after.jti) > 0));
    return (filter.limit === undefined ? out : out.slice(0, filter.limit)).map((t) => ({ ...t }));
  }

  async countTokens(filter: TokenFilter): Promise<number> {
    return (await this.listTokens({ ...filter, limit: undefined, after: undefined })).length;
  }

  async countRevocable(selector: BulkSelector, now: number): Promise<number> {
    this.check();
    return this.revocable(selector, now).length;
  }
}
