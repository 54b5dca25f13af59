import { createHmac, timingSafeEqual } from 'node:crypto';
import { DpopProofError } from './proof.js';

/** How long one nonce is handed out; a nonce is accepted in its slot and the next (so 1–2 slots). */
export const NONCE_SLOT_MS = 60_000;

/**
 * Server-provided nonces (RFC 9449 §8), stateless: a nonce is its time slot and an HMAC of it
 * under a secret every node is given, so that any node accepts what another handed out and
 * none stores anything. A nonce is good for the slot it was made in and the next one.
 */
export class DpopNonces {
  private readonly key: Buffer;

  constructor(secret: string) {
    this.key = Buffer.from(secret, 'utf8');
  }

  /** The nonce to hand out at `now` (the `DPoP-Nonce` header, §8.1). */
  current(now: number): string {
    return this.forSlot(Math.floor(now / NONCE_SLOT_MS));
  }

  /** Whether `nonce` was made by a node with the same secret in this slot or the one before. */
  accepts(nonce: string, now: number): boolean {
    const slot = Math.floor(now / NONCE_SLOT_MS);
    return [slot, slot - 1].some((s) => equal(nonce, this.forSlot(s)));
  }

  /**
   * The check {@link verifyProof} runs on a proof's `nonce`: a missing or stale one is refused
   * with reason `nonce`, answered `use_dpop_nonce` with a fresh nonce (§8).
   */
  check(now: number): (nonce: string | undefined) => void {
    return (nonce) => {
      if (nonce === undefined || !this.accepts(nonce, now)) throw new DpopProofError('nonce', 'Authorization server requires nonce in DPoP proof');
    };
  }

  private forSlot(slot: number): string {
    const s = slot.toString(36);
    return `${s}.${createHmac('sha256', this.key).update(`dpop-nonce.${s}`).digest('base64url')}`;
  }
}

function equal(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
