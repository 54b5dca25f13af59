import type { Trail } from '../trail.js';
import {
  DuplicateClientError,
  TOKEN_TYPES,
  tokenState,
  type AuditEntry,
  type AuditFilter,
  type BulkBatch,
  type BulkSelector,
  type ClientAndToken,
  type ClientRecord,
  type MintLimit,
  type MintOutcome,
  type RotateOutcome,
  type StoreStats,
  type TokenFilter,
  type TokenRecord,
  type TokenStore,
} from '../store.js';
import type { EventStore } from '../store.js';
import { ForwardsEventStore } from '../forward-events.js';
import { MemoryEvents } from './outbox-store.js';
import { MemoryAuthorizations } from './authorizations.js';
import { MemoryDpopProofs } from './dpop-proofs.js';
import type { AuthorizationKey, AuthorizationRecord, ClientSettings, IssuedCode, LoginDecision, RedeemOutcome } from '../store.js';

export const MEMORY_SCHEMA_VERSION = 1;

/**
 * The reference implementation of {@link TokenStore}: plain maps, every method atomic because
 * it never awaits in the middle. Used by engine tests and as the model the other stores match.
 */
export class MemoryStore extends ForwardsEventStore implements TokenStore {
  readonly location = ':memory:';
  private readonly clients = new Map<string, ClientRecord>();
  private readonly tokens = new Map<string, TokenRecord>(); // by jti
  private readonly byDigest = new Map<string, string>(); // digest -> jti
  private auditLog: AuditEntry[] = [];
  private nextAuditId = 1;
  private readonly events = new MemoryEvents((entry) => this.appendAuditNow(entry));
  private readonly authorizations = new MemoryAuthorizations();
  private readonly dpopProofs = new MemoryDpopProofs();
  private closed = false;

  private check(): void {
    if (this.closed) throw new Error('the store is closed');
  }

  async schemaVersion(): Promise<number> {
    return MEMORY_SCHEMA_VERSION;
  }

  async createClient(client: ClientRecord, trail: Trail): Promise<void> {
    const { audit } = trail;
    this.check();
    if (this.clients.has(client.id)) throw new DuplicateClientError(client.id);
    this.clients.set(client.id, copyClient(client));
    if (audit) this.appendAuditNow(audit);
  }

  async getClient(id: string): Promise<ClientRecord | null> {
    this.check();
    const c = this.clients.get(id);
    return c ? copyClient(c) : null;
  }

  async listClients(): Promise<ClientRecord[]> {
    this.check();
    return [...this.clients.values()].sort((a, b) => a.createdAt - b.createdAt || compare(a.id, b.id)).map(copyClient);
  }

  async deleteClient(id: string, trail: Trail): Promise<boolean> {
    const { audit, event } = trail;
    this.check();
    if (!this.clients.delete(id)) return false;
    for (const t of [...this.tokens.values()]) if (t.clientId === id) this.remove(t);
    this.authorizations.deleteClient(id);
    this.events.emit(event);
    if (audit) this.appendAuditNow(audit);
    return true;
  }

  async updateClientSecret(id: string, secretHash: string, at: number, trail: Trail): Promise<boolean> {
    const { audit } = trail;
    this.check();
    const c = this.clients.get(id);
    if (!c) return false;
    c.secretHash = secretHash;
    c.secretUpdatedAt = at;
    if (audit) this.appendAuditNow(audit);
    return true;
  }

  async updateClientSettings(id: string, settings: ClientSettings, trail: Trail): Promise<boolean> {
    this.check();
    const c = this.clients.get(id);
    if (!c) return false;
    Object.assign(c, { redirectUris: [...settings.redirectUris], grantTypes: [...settings.grantTypes], loginProvider: settings.loginProvider, requireDpop: settings.requireDpop });
    if (trail.audit) this.appendAuditNow(trail.audit);
    return true;
  }

  async insertTokens(tokens: TokenRecord[]): Promise<void> {
    this.check();
    this.insertTokensNow(tokens);
  }

  private insertTokensNow(tokens: TokenRecord[]): void {
    for (const t of tokens) {
      if (this.tokens.has(t.jti) || this.byDigest.has(t.digest)) throw new Error(`duplicate token ${t.jti}`);
    }
    for (const t of tokens) this.put(t);
  }

  // ---- the authorization code flow (memory/authorizations.ts) ----------------------------------

  async createAuthorization(authorization: AuthorizationRecord): Promise<void> {
    this.check();
    this.authorizations.create(authorization);
  }
  async findAuthorization(key: AuthorizationKey): Promise<AuthorizationRecord | null> {
    this.check();
    return this.authorizations.find(key);
  }
  async decideAuthorization(id: string, decision: LoginDecision, at: number): Promise<boolean> {
    this.check();
    return this.authorizations.decide(id, decision, at);
  }
  async issueAuthorizationCode(id: string, code: IssuedCode, at: number): Promise<boolean> {
    this.check();
    return this.authorizations.issueCode(id, code, at);
  }
  async redeemAuthorizationCode(codeDigest: string, at: number, tokens: TokenRecord[], trail: Trail): Promise<RedeemOutcome> {
    this.check();
    return this.authorizations.redeem(codeDigest, at, () => {
      this.insertTokensNow(tokens);
      if (trail.audit) this.appendAuditNow(trail.audit);
    });
  }
  async purgeAuthorizations(before: number, limit: number): Promise<number> {
    this.check();
    return this.authorizations.purge(before, limit);
  }

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

  async revokeToken(jti: string, at: number, cascadeGrant: boolean, trail: Trail): Promise<boolean> {
    const { audit, event } = trail;
    this.check();
    const t = this.tokens.get(jti);
    if (!t || t.revokedAt !== null) return false;
    t.revokedAt = at;
    if (cascadeGrant) this.revokeGrantSync(t.grantId, at);
    if (audit) this.auditLog.push({ ...audit, id: this.nextAuditId++ });
    this.events.emit(event);
    return true;
  }

  async insertMintedAccess(access: TokenRecord, refreshJti: string, limit?: MintLimit): Promise<MintOutcome> {
    this.check();
    const refresh = this.tokens.get(refreshJti);
    if (!refresh) return 'unknown';
    if (refresh.revokedAt !== null || refresh.replacedAt !== null) return 'revoked';
    if (limit) {
      let recent = 0;
      for (const t of this.tokens.values()) if (t.grantId === refresh.grantId && t.issuedAt > limit.since) recent++;
      if (recent >= limit.max) return 'limited';
    }
    await this.insertTokens([access]);
    return 'inserted';
  }

  async revokeGrant(grantId: string, at: number, trail: Trail): Promise<number> {
    const { audit, event } = trail;
    this.check();
    const n = this.revokeGrantSync(grantId, at);
    if (n > 0 && audit) this.auditLog.push({ ...audit, count: n, id: this.nextAuditId++ });
    if (n > 0) this.events.emit(event);
    return n;
  }

  async revokeBulk(selector: BulkSelector, at: number, limit: number, resume: string | undefined, trail: Trail): Promise<BulkBatch> {
    const { audit, event } = trail;
    this.check();
    const revocable = this.revocable(selector, at);
    // A jti names one token or one grant: done in one step. Users and clients go in batches.
    const victims = 'jti' in selector ? revocable : revocable.slice(0, Math.max(1, limit));
    for (const t of victims) t.revokedAt = at;
    if (victims.length > 0 && audit) this.auditLog.push({ ...audit, count: victims.length, id: this.nextAuditId++ });
    const more = victims.length < revocable.length;
    if (victims.length > 0) this.events.emit(event);
    // The resume only says "a batch ran before" here: the memory store needs no position.
    return { revoked: victims.length, more, ...(more ? { resume: 'more' } : {}) };
  }

  async rotateRefreshToken(oldJti: string, issued: TokenRecord[], at: number, revokeJti?: string): Promise<RotateOutcome> {
    this.check();
    const old = this.tokens.get(oldJti);
    if (!old || old.revokedAt !== null) return 'conflict';
    const newRefresh = issued.find((t) => t.type === 'refresh_token');
    if (revokeJti === undefined) {
      if (old.replacedAt !== null) return 'conflict';
    } else {
      const lost = this.tokens.get(revokeJti);
      if (old.replacedBy !== revokeJti || !lost || lost.revokedAt !== null || lost.replacedAt !== null) return 'conflict';
      // Superseded: revoked, and replaced by the new token, so that presenting it again is reuse.
      lost.revokedAt = at;
      lost.replacedAt = at;
      lost.replacedBy = newRefresh?.jti ?? null;
      for (const t of this.tokens.values()) {
        const lostResponse = t.grantId === lost.grantId && t.type === 'access_token' && t.issuedAt === lost.issuedAt;
        if (lostResponse && t.issuedAt !== old.issuedAt) t.revokedAt ??= at;
      }
    }
    old.replacedAt ??= at;
    old.replacedBy = newRefresh?.jti ?? null;
    for (const t of issued) this.put(t);
    return 'rotated';
  }

  async purgeBatch(before: number, batchSize: number, trail: Trail): Promise<number> {
    const { audit } = trail;
    this.check();
    const victims = [...this.tokens.values()].filter((t) => this.purgeable(t, before)).slice(0, batchSize);
    for (const t of victims) this.remove(t);
    if (audit && victims.length > 0) this.auditLog.push({ ...audit, count: victims.length, id: this.nextAuditId++ });
    return victims.length;
  }

  async rememberDpopProof(key: string, until: number, now: number): Promise<boolean> {
    this.check();
    return this.dpopProofs.rememberDpopProof(key, until, now);
  }

  async purgeDpopProofs(before: number, batchSize: number): Promise<number> {
    this.check();
    return this.dpopProofs.purgeDpopProofs(before, batchSize);
  }

  async countPurgeable(before: number): Promise<number> {
    this.check();
    return [...this.tokens.values()].filter((t) => this.purgeable(t, before)).length;
  }

  async purgeGrantsBatch(): Promise<{ deleted: number; next: string | null }> {
    this.check();
    return { deleted: 0, next: null }; // a grant here is only the id its tokens share
  }

  async purgeAuditBatch(before: number, batchSize: number, trail: Trail): Promise<number> {
    this.check();
    const victims = new Set(this.auditLog.filter((e) => e.at < before).slice(0, batchSize));
    if (victims.size === 0) return 0;
    this.auditLog = this.auditLog.filter((e) => !victims.has(e));
    if (trail.audit) this.auditLog.push({ ...trail.audit, count: victims.size, id: this.nextAuditId++ });
    return victims.size;
  }

  async countAuditBefore(before: number): Promise<number> {
    this.check();
    return this.auditLog.filter((e) => e.at < before).length;
  }

  async stats(now: number, clientId?: string): Promise<StoreStats> {
    this.check();
    const tokens = Object.fromEntries(TOKEN_TYPES.map((type) => [type, { active: 0, expired: 0, revoked: 0 }])) as StoreStats['tokens'];
    let oldestExpiredAt: number | null = null;
    for (const t of this.tokens.values()) {
      if (clientId !== undefined && t.clientId !== clientId) continue;
      const state = tokenState(t, now);
      tokens[t.type][state]++;
      if (t.expiresAt <= now && (oldestExpiredAt === null || t.expiresAt < oldestExpiredAt)) oldestExpiredAt = t.expiresAt;
    }
    return { clients: this.clients.size, tokens, oldestExpiredAt };
  }

  async appendAudit(entry: AuditEntry): Promise<void> {
    this.appendAuditNow(entry);
  }

  private appendAuditNow(entry: AuditEntry): void {
    this.check();
    this.auditLog.push({ ...entry, id: this.nextAuditId++ });
  }

  async listAudit(filter: AuditFilter): Promise<AuditEntry[]> {
    this.check();
    const out = this.matchingAudit(filter)
      .filter((e) => filter.beforeId === undefined || e.id! < filter.beforeId)
      .reverse();
    return (filter.limit === undefined ? out : out.slice(0, filter.limit)).map((e) => ({ ...e }));
  }

  async countAudit(filter: Omit<AuditFilter, 'beforeId' | 'limit'>): Promise<number> {
    this.check();
    return this.matchingAudit(filter).length;
  }

  private matchingAudit(filter: AuditFilter): AuditEntry[] {
    return this.auditLog
      .filter((e) => filter.since === undefined || e.at >= filter.since)
      .filter((e) => filter.jti === undefined || e.target.split(' ').includes(filter.jti))
      .filter((e) => filter.clientId === undefined || e.actor === filter.clientId || e.target.split(' ').includes(`client:${filter.clientId}`))
      .filter((e) => !filter.hideActions?.includes(e.action));
  }

  async ping(): Promise<void> {
    this.check();
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  // ---- helpers ------------------------------------------------------------------------------

  private put(t: TokenRecord): void {
    this.tokens.set(t.jti, { ...t });
    this.byDigest.set(t.digest, t.jti);
  }

  private remove(t: TokenRecord): void {
    this.tokens.delete(t.jti);
    this.byDigest.delete(t.digest);
  }

  private copy(jti: string): TokenRecord | null {
    const t = this.tokens.get(jti);
    return t ? { ...t } : null;
  }

  private revokeGrantSync(grantId: string, at: number): number {
    let n = 0;
    for (const t of this.tokens.values()) {
      if (t.grantId === grantId && t.revokedAt === null) {
        t.revokedAt = at;
        n++;
      }
    }
    return n;
  }

  /** Not yet revoked, not yet expired tokens the selector names, or of a grant whose refresh token it names. */
  private revocable(selector: BulkSelector, now: number): TokenRecord[] {
    const live = [...this.tokens.values()].filter((t) => t.revokedAt === null && t.expiresAt > now);
    const named = (t: TokenRecord): boolean => {
      if ('jti' in selector) return t.jti === selector.jti;
      if ('username' in selector) return t.username === selector.username && (selector.clientId === undefined || t.clientId === selector.clientId);
      return t.clientId === selector.clientId;
    };
    const grants = new Set(live.filter((t) => t.type === 'refresh_token' && named(t)).map((t) => t.grantId));
    return live.filter((t) => named(t) || grants.has(t.grantId));
  }

  // ---- security events (outbox-store.ts): the methods forward to this (forward-events.ts) ----

  protected _eventStore(): EventStore {
    this.check();
    return this.events;
  }

  private purgeable(t: TokenRecord, before: number): boolean {
    return t.expiresAt < before || (t.revokedAt !== null && t.revokedAt < before);
  }
}

/** A client record that shares nothing with `c`: its lists are copied too, so no caller changes what is stored. */
function copyClient(c: ClientRecord): ClientRecord {
  return { ...c, redirectUris: [...c.redirectUris], grantTypes: [...c.grantTypes] };
}

/** Byte-order comparison, as SQLite's BINARY and PostgreSQL's "C" collations order. */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
