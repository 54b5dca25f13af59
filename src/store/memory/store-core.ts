import type { AuditEntry, BulkSelector, ClientRecord, TokenRecord } from '../store.js';
import type { EventStore } from '../store.js';
import { ForwardsEventStore } from '../forward-events.js';
import { MemoryEvents } from './outbox-store.js';
import { MemoryAuthorizations } from './authorizations.js';
import { MemoryDpopProofs } from './dpop-proofs.js';

/** The in-memory store's maps and the steps its methods share: the design is told in store.ts. */
export abstract class MemoryStoreCore extends ForwardsEventStore {
  readonly location = ':memory:';
  protected readonly clients = new Map<string, ClientRecord>();
  protected readonly tokens = new Map<string, TokenRecord>(); // by jti
  protected readonly byDigest = new Map<string, string>(); // digest -> jti
  protected auditLog: AuditEntry[] = [];
  protected nextAuditId = 1;
  protected readonly events = new MemoryEvents((entry) => this.appendAuditNow(entry));
  protected readonly authorizations = new MemoryAuthorizations();
  protected readonly dpopProofs = new MemoryDpopProofs();
  protected closed = false;

  protected check(): void {
    if (this.closed) throw new Error('the store is closed');
  }

  protected insertTokensNow(tokens: TokenRecord[]): void {
    for (const t of tokens) {
      if (this.tokens.has(t.jti) || this.byDigest.has(t.digest)) throw new Error(`duplicate token ${t.jti}`);
    }
    for (const t of tokens) this.put(t);
  }

  protected appendAuditNow(entry: AuditEntry): void {
    this.check();
    this.auditLog.push({ ...entry, id: this.nextAuditId++ });
  }

  // ---- helpers ------------------------------------------------------------------------------

  protected put(t: TokenRecord): void {
    this.tokens.set(t.jti, { ...t });
    this.byDigest.set(t.digest, t.jti);
  }

  protected remove(t: TokenRecord): void {
    this.tokens.delete(t.jti);
    this.byDigest.delete(t.digest);
  }

  protected copy(jti: string): TokenRecord | null {
    const t = this.tokens.get(jti);
    return t ? { ...t } : null;
  }

  protected revokeGrantSync(grantId: string, at: number): number {
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
  protected revocable(selector: BulkSelector, now: number): TokenRecord[] {
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

  protected purgeable(t: TokenRecord, before: number): boolean {
    return t.expiresAt < before || (t.revokedAt !== null && t.revokedAt < before);
  }
}

/** Byte-order comparison, as SQLite's BINARY and PostgreSQL's "C" collations order. */
export function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
