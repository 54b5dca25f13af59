import type { DpopProofStore } from '../../store/store.js';
import { InvalidDpopProofError, InvalidInputError, UseDpopNonceError } from '../errors.js';
import { DpopNonces } from './nonce.js';
import { DpopProofError, singleProof, verifyProof, type VerifiedProof } from './proof.js';

/**
 * A token request's `DPoP` header (RFC 9449 §4.1), as the request object carries it to the engine
 * (`TokenRequest.dpop`), and what its proof is checked against.
 */
export interface DpopPresentation {
  /** The header as Node gives it: absent, one value, or several (joined by commas). */
  header: string | string[] | undefined;
  /** The request's method (`htm`). */
  method: string;
  /** The endpoint's URL as the server names it in its metadata (`htu`): the issuer's, never the Host header's. */
  url: string;
}

/**
 * What the tokens of one token request are bound to (RFC 9449 §5, §6): the thumbprint of its
 * proof's key, or null for bearer tokens. A grant's mint step gives it to every token it makes.
 */
export interface TokenBinding {
  readonly jkt: string | null;
}

/** No proof: bearer tokens. */
export const BEARER: TokenBinding = Object.freeze({ jkt: null });

/** The shortest nonce secret accepted: 256 bits written as text, as a generated client secret has. */
const MIN_NONCE_SECRET = 32;

/**
 * The token endpoint's DPoP checks: the proof (proof.ts), its replay across every node of the
 * store (ports/dpop-proofs.ts), and server nonces (nonce.ts) when the engine was given a secret.
 */
export class DpopChecks {
  private readonly nonces: DpopNonces | undefined;

  constructor(nonceSecret: string) {
    if (nonceSecret !== '' && nonceSecret.length < MIN_NONCE_SECRET) {
      throw new InvalidInputError(`the DPoP nonce secret must be at least ${MIN_NONCE_SECRET} characters (every node is given the same one)`);
    }
    this.nonces = nonceSecret === '' ? undefined : new DpopNonces(nonceSecret);
  }

  /** Whether proofs must carry a server nonce (§8). */
  get noncesOn(): boolean {
    return this.nonces !== undefined;
  }

  /**
   * The proof of `presentation`, checked at `now` (all of §4.3 but the replay, which
   * {@link remember} checks once the client is known); null when the request carries none.
   * Throws {@link InvalidDpopProofError}, or {@link UseDpopNonceError} for a missing or stale nonce.
   */
  async proofOf(presentation: DpopPresentation | undefined, now: number): Promise<VerifiedProof | null> {
    if (presentation === undefined) return null;
    try {
      const proof = singleProof(presentation.header);
      if (proof === undefined) return null;
      return await verifyProof(proof, { method: presentation.method, url: presentation.url, nonce: this.nonces?.check(now) }, now);
    } catch (err) {
      if (err instanceof DpopProofError) {
        if (err.reason === 'nonce' && this.nonces !== undefined) throw new UseDpopNonceError(this.nonces.current(now));
        throw new InvalidDpopProofError(err.reason, err.message);
      }
      throw err;
    }
  }

  /** §11.1: the proof's first use, on any node of the store; a replay is {@link InvalidDpopProofError}. */
  async remember(store: DpopProofStore, proof: VerifiedProof, now: number): Promise<void> {
    if (!(await store.rememberDpopProof(proof.replayKey, proof.replayUntil, now))) {
      throw new InvalidDpopProofError('replayed', 'The DPoP proof was used before: make a new proof (a new jti) for every request');
    }
  }

  /** The nonce to hand out with an answer at `now` (`DPoP-Nonce`, §8.2), when nonces are on. */
  nonce(now: number): string | undefined {
    return this.nonces?.current(now);
  }
}

/** What a bound grant's refusals say: without a proof, and with a proof by another key. */
export interface BoundKeyRefusals {
  readonly required: string;
  readonly keyMismatch: string;
}

/** RFC 9449 §10: an authorization code whose request named `dpop_jkt`. */
export const BOUND_CODE: BoundKeyRefusals = Object.freeze({
  required: 'The authorization code is bound to a DPoP key (dpop_jkt): the token request needs a DPoP proof made with it (RFC 9449 §10)',
  keyMismatch: 'The DPoP proof is not made with the key the authorization request named in dpop_jkt (RFC 9449 §10)',
});

/** RFC 9449 §5: a refresh token issued with a proof (a public client's). */
export const BOUND_REFRESH: BoundKeyRefusals = Object.freeze({
  required: 'The refresh token is bound to a DPoP key: the request needs a DPoP proof made with it (RFC 9449 §5)',
  keyMismatch: 'The DPoP proof is not made with the key the refresh token is bound to (RFC 9449 §5)',
});

/**
 * RFC 9449 §5, §10: a grant bound to the key thumbprint `boundJkt` is used only with a proof by
 * that key; null binds nothing. Throws {@link InvalidDpopProofError} with the `refusals` of that
 * grant otherwise, before anything is issued.
 */
export function checkBoundKey(boundJkt: string | null, binding: TokenBinding, refusals: BoundKeyRefusals): void {
  if (boundJkt === null || boundJkt === binding.jkt) return;
  if (binding.jkt === null) throw new InvalidDpopProofError('required', refusals.required);
  throw new InvalidDpopProofError('key_mismatch', refusals.keyMismatch);
}
