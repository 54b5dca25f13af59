import { createHash } from 'node:crypto';
import type { HeadersLike } from './adapters.js';
import { checkProof, DpopProofError, type CheckedProof, type ProofCheckOptions } from './dpop.js';
import { DPOP_ALGORITHMS } from './dpop-rules.js';
import { SeenSet } from './seen-set.js';

/** The `dpop` option of the resource server: how DPoP-bound tokens (RFC 9449 §7) are accepted. */
export interface DpopOptions {
  /**
   * The API's origin as its clients call it (`https://api.example.com`): a proof's `htu` must be
   * this and the request's path. Never read from the request's `Host` header, which the client
   * writes: a proof made for another API would pass.
   */
  origin?: string;
  /**
   * Instead of `origin`: the method and absolute URL the client sent, for an API behind a proxy
   * that passes them on (the NGINX sidecar reads `X-Original-Method` and `X-Original-URI`).
   */
  request?: (req: HeadersLike) => { method: string; url: string } | undefined;
  /** The proof algorithms accepted: some of {@link DPOP_ALGORITHMS} (tokenctl's own), by default all. */
  algorithms?: readonly string[];
  /** How old a proof's `iat` may be. Default 60 s. */
  maxAgeMs?: number;
  /** How far in the future its `iat` may be (clock skew). Default 5 s. */
  maxSkewMs?: number;
  /**
   * A proof presented again within the window is refused (RFC 9449 §11.1), remembered in this
   * process only: another process or replica of the API does not see it. Default on, at most
   * 100,000 proofs; `false` turns it off.
   */
  replay?: false | { maxEntries?: number };
  /** Refuse every token presented as `Bearer`, bound or not: the API takes DPoP-bound tokens only. Default false. */
  required?: boolean;
}

/** What checks the proofs of one resource server: its options resolved, its replay cache. */
export class DpopGuard {
  readonly algorithms: readonly string[];
  readonly required: boolean;
  private readonly check: ProofCheckOptions;
  private readonly replays: SeenSet | undefined;
  private readonly target: (req: HeadersLike) => { method: string; url: string } | undefined;

  constructor(options: DpopOptions) {
    this.algorithms = options.algorithms ?? DPOP_ALGORITHMS;
    if (this.algorithms.length === 0 || this.algorithms.some((alg) => !DPOP_ALGORITHMS.includes(alg))) {
      throw new TypeError(`dpop.algorithms: some of tokenctl's DPoP algorithms (${DPOP_ALGORITHMS.join(', ')})`);
    }
    this.required = options.required ?? false;
    this.check = { algorithms: this.algorithms, maxAgeMs: options.maxAgeMs ?? 60_000, maxSkewMs: options.maxSkewMs ?? 5_000 };
    this.replays = options.replay === false ? undefined : new SeenSet(options.replay?.maxEntries ?? 100_000, this.check.maxAgeMs + this.check.maxSkewMs);
    if (options.request) this.target = options.request;
    else if (options.origin !== undefined) {
      const origin = new URL(options.origin).origin;
      this.target = (req) => {
        const path = req.originalUrl ?? req.url;
        return req.method === undefined || path === undefined || !path.startsWith('/') ? undefined : { method: req.method, url: origin + path };
      };
    } else throw new TypeError('dpop needs origin (the API\'s URL as its clients call it) or request');
  }

  /** The request's proof for `token`, checked (RFC 9449 §4.3, §7.1) but not yet counted as used. */
  async proof(req: HeadersLike, token: string, now: number): Promise<CheckedProof> {
    const target = this.target(req);
    if (target === undefined) throw new DpopProofError('the request URL is not known');
    return checkProof(req.headers['dpop'], { ...target, token }, this.check, now);
  }

  /** Whether a checked proof is used for the first time (always, with the replay check off); remembers it. */
  firstUse(proof: CheckedProof, now: number): boolean {
    if (this.replays === undefined) return true;
    // Keyed by the key's thumbprint and the jti, so one client's jti cannot block another's; kept until the iat leaves the window.
    const key = createHash('sha256').update(`${proof.jkt}\u0000${proof.jti}`).digest('base64url');
    return this.replays.firstTime(key, now, proof.iat * 1000 + this.check.maxAgeMs + this.check.maxSkewMs);
  }
}
