import type { DpopProofStore } from '../ports/dpop-proofs.js';

/** Past this many proofs remembered, the expired ones are swept before the next is added. */
const SWEEP_AT = 10_000;

/** The memory store's DPoP proofs seen (ports/dpop-proofs.ts): a map of key to `until`. */
export class MemoryDpopProofs implements DpopProofStore {
  private readonly seen = new Map<string, number>();

  async rememberDpopProof(key: string, until: number, now: number): Promise<boolean> {
    const known = this.seen.get(key);
    if (known !== undefined && known > now) return false;
    if (this.seen.size >= SWEEP_AT) this.sweep(now);
    this.seen.set(key, until);
    return true;
  }

  async purgeDpopProofs(before: number, batchSize: number): Promise<number> {
    let deleted = 0;
    for (const [key, until] of this.seen) {
      if (deleted >= batchSize) break;
      if (until < before) {
        this.seen.delete(key);
        deleted++;
      }
    }
    return deleted;
  }

  private sweep(now: number): void {
    for (const [key, until] of this.seen) if (until <= now) this.seen.delete(key);
  }
}
