import { presentedToken, refusal, type Check, type HeadersLike, type Principal, type Refusal, type RefusalKind } from './adapters.js';
import { DpopProofError, type CheckedProof } from './dpop.js';
import type { DpopGuard } from './dpop-guard.js';

export interface RequestCheckDeps {
  /** Absent: only `Bearer` is accepted, and a DPoP-bound token never is. */
  dpop: DpopGuard | undefined;
  realm: string | undefined;
  /** The principal of an active access token meant for this API, bound (`jkt`) or not; rejects when tokenctl cannot be asked. */
  principalOf: (token: string) => Promise<Principal | null>;
  onDpopRefused: () => void;
}

/**
 * The check of one request's `Authorization` (RFC 6750 §2.1, RFC 9449 §7): its token, its DPoP
 * proof, the token's binding and scope, in that order, and the refusal to send when one fails.
 */
export class RequestChecker {
  constructor(private readonly deps: RequestCheckDeps) {}

  async check(req: HeadersLike, scopes: readonly string[]): Promise<Check> {
    const { dpop } = this.deps;
    const presented = presentedToken(req, dpop !== undefined);
    if (presented === null) return this.no('missing');
    if (presented === false) return this.no('malformed');
    const { scheme, token } = presented;
    const now = Date.now();
    let proof: CheckedProof | undefined;
    if (scheme === 'DPoP') {
      try {
        // Checked before tokenctl is asked: a request without a good proof costs no introspection.
        proof = await dpop!.proof(req, token, now);
      } catch (error) {
        if (!(error instanceof DpopProofError)) throw error;
        return this.dpopRefusal('invalid_dpop_proof', scheme, error.message);
      }
    } else if (dpop?.required) return this.dpopRefusal('invalid', scheme, 'this API takes DPoP-bound tokens only');
    let principal: Principal | null;
    try {
      principal = await this.deps.principalOf(token);
    } catch {
      return this.no('unavailable');
    }
    if (!principal) return this.no('invalid', scheme);
    // §7.2: a bound token without its proof, which is what a stolen one is, gets nothing.
    if (proof === undefined && principal.jkt !== undefined) return this.dpopRefusal('invalid', scheme, 'the access token is DPoP-bound: present it with its proof');
    if (proof !== undefined && principal.jkt !== proof.jkt) return this.dpopRefusal('invalid', scheme, 'the access token is not bound to the key of the DPoP proof');
    // Counted as used only now, in one synchronous step: of two requests with one proof, one passes.
    if (proof !== undefined && !dpop!.firstUse(proof, now)) return this.dpopRefusal('invalid_dpop_proof', scheme, 'the DPoP proof was used before');
    if (!scopes.every((s) => principal.scopes.includes(s))) return { ok: false, refusal: this.refuse('insufficient_scope', scheme, undefined, scopes) };
    return { ok: true, principal };
  }

  /** The refusal of `kind`, its challenges for the scheme the request used (and DPoP's when accepted). */
  refuse(kind: RefusalKind, scheme?: 'Bearer' | 'DPoP', description?: string, scopes: readonly string[] = []): Refusal {
    return refusal(kind, this.deps.realm, scopes, { scheme, dpopAlgorithms: this.deps.dpop?.algorithms, description });
  }

  private no(kind: RefusalKind, scheme?: 'Bearer' | 'DPoP'): Check {
    return { ok: false, refusal: this.refuse(kind, scheme) };
  }

  private dpopRefusal(kind: RefusalKind, scheme: 'Bearer' | 'DPoP', description: string): Check {
    this.deps.onDpopRefused();
    return { ok: false, refusal: this.refuse(kind, scheme, description) };
  }
}
