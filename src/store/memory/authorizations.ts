import type { AuthorizationKey, AuthorizationRecord, IssuedCode, LoginDecision, RedeemOutcome } from '../authorization-records.js';

/**
 * The authorization requests of the memory store (ports/authorizations.ts): a map by id and one
 * by each digest. Every method is atomic because it never awaits in the middle.
 */
export class MemoryAuthorizations {
  private readonly byId = new Map<string, AuthorizationRecord>();
  private readonly byDigest = new Map<string, string>(); // any of the three digests -> id

  create(a: AuthorizationRecord): void {
    if (this.byId.has(a.id) || this.byDigest.has(a.challengeDigest)) throw new Error(`duplicate authorization ${a.id}`);
    this.byId.set(a.id, { ...a });
    this.byDigest.set(a.challengeDigest, a.id);
  }

  find(key: AuthorizationKey): AuthorizationRecord | null {
    const digest = 'challengeDigest' in key ? key.challengeDigest : 'verifierDigest' in key ? key.verifierDigest : key.codeDigest;
    const a = this.byId.get(this.byDigest.get(digest) ?? '');
    if (a === undefined) return null;
    const matches = 'challengeDigest' in key ? a.challengeDigest === digest : 'verifierDigest' in key ? a.verifierDigest === digest : a.codeDigest === digest;
    return matches ? { ...a } : null;
  }

  decide(id: string, decision: LoginDecision, at: number): boolean {
    const a = this.byId.get(id);
    if (a === undefined || a.status !== 'pending' || at >= a.expiresAt) return false;
    Object.assign(a, {
      status: decision.status,
      decidedAt: at,
      verifierDigest: decision.verifierDigest,
      ...(decision.status === 'accepted'
        ? { subject: decision.subject, username: decision.username, grantedScope: decision.grantedScope }
        : { error: decision.error, errorDescription: decision.errorDescription }),
    });
    this.byDigest.set(decision.verifierDigest, id);
    return true;
  }

  issueCode(id: string, code: IssuedCode, at: number): boolean {
    const a = this.byId.get(id);
    if (a === undefined || a.status !== 'accepted' || a.codeDigest !== null || at >= a.expiresAt) return false;
    Object.assign(a, { codeDigest: code.codeDigest, codeExpiresAt: code.expiresAt, grantId: code.grantId });
    this.byDigest.set(code.codeDigest, id);
    return true;
  }

  /** Marks the code redeemed when it may be; `write` stores what the redemption writes beside it. */
  redeem(codeDigest: string, at: number, write: () => void): RedeemOutcome {
    const a = this.find({ codeDigest });
    if (a === null) return 'invalid';
    const stored = this.byId.get(a.id)!;
    if (stored.redeemedAt !== null) return 'used';
    if (stored.codeExpiresAt === null || at >= stored.codeExpiresAt) return 'invalid';
    write();
    stored.redeemedAt = at;
    return 'redeemed';
  }

  purge(before: number, limit: number): number {
    let n = 0;
    for (const a of [...this.byId.values()]) {
      if (n >= limit) break;
      if (!ended(a, before)) continue;
      this.purgeOne(a);
      n++;
    }
    return n;
  }

  /** Drops the requests of a deleted client. */
  deleteClient(clientId: string): void {
    for (const a of [...this.byId.values()]) if (a.clientId === clientId) this.purgeOne(a);
  }

  private purgeOne(a: AuthorizationRecord): void {
    this.byId.delete(a.id);
    for (const d of [a.challengeDigest, a.verifierDigest, a.codeDigest]) if (d !== null) this.byDigest.delete(d);
  }
}

/**
 * Whether a request ended before `before`: its challenge and its code (if any) both expired then.
 * The SQL stores' purge uses the same rule.
 */
export function ended(a: AuthorizationRecord, before: number): boolean {
  return Math.max(a.expiresAt, a.codeExpiresAt ?? 0) < before;
}
