import { createHash } from 'node:crypto';
import { calculateJwkThumbprint, compactVerify, decodeProtectedHeader, EmbeddedJWK, type JWK } from 'jose';

/**
 * A resource server's check of a DPoP proof (RFC 9449 §4.3 and §7.1): the `DPoP` header that
 * comes with `Authorization: DPoP <token>`. Everything that can be checked without tokenctl is
 * checked here; the key's thumbprint is then compared with the token's introspected `cnf.jkt`.
 */

/** The asymmetric JWS algorithms accepted by default (RFC 9449 §4.3 point 6: never `none`, never a MAC). */
export const DPOP_ALGORITHMS = ['ES256', 'ES384', 'ES512', 'PS256', 'PS384', 'PS512', 'RS256', 'RS384', 'RS512', 'EdDSA', 'Ed25519'] as const;

/** Private members of RSA, EC and OKP keys (RFC 7518 §6, RFC 8037 §2): a proof's `jwk` carries none (§4.3 point 7). */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];

export interface ProofCheckOptions {
  algorithms: readonly string[];
  /** How far in the past a proof's `iat` may be (ms). */
  maxAgeMs: number;
  /** How far in the future (clock skew, ms). */
  maxSkewMs: number;
}

export interface CheckedProof {
  /** RFC 7638 SHA-256 thumbprint of the proof's key, base64url: what `cnf.jkt` must equal. */
  jkt: string;
  jti: string;
  /** Seconds since the epoch. */
  iat: number;
}

/** Why a proof was refused; the message goes into `error_description` (it names no token or key). */
export class DpopProofError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DpopProofError';
  }
}

/** RFC 9449 §4.2: `ath` is base64url(SHA-256(ASCII(access token))). */
export function accessTokenHash(token: string): string {
  return createHash('sha256').update(token, 'ascii').digest('base64url');
}

/**
 * RFC 9449 §4.3 point 9 with RFC 3986 §6: the URI without query and fragment, scheme and host in
 * lower case, default port dropped, dot segments removed (WHATWG URL parsing does these) and
 * percent escapes in upper case. Null when it is not an absolute http(s) URL.
 */
export function normalizeHtu(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return null;
  const path = url.pathname.replace(/%[0-9a-f]{2}/gi, (escape) => escape.toUpperCase());
  return `${url.protocol}//${url.host}${path}`;
}

/**
 * Checks one proof for one request: `header` is the `DPoP` header value (all of them, as Node
 * gives them), `method` and `url` the request as its client addressed it, `token` the access
 * token it comes with. Throws {@link DpopProofError}; the replay check and `cnf.jkt` are the caller's.
 */
export async function checkProof(header: string | string[] | undefined, request: { method: string; url: string; token: string }, options: ProofCheckOptions, now: number): Promise<CheckedProof> {
  // §4.3 point 1: exactly one DPoP header; Node joins repeated ones with ", ", which no JWS contains.
  if (header === undefined || header === '') throw new DpopProofError('no DPoP proof');
  if (Array.isArray(header) || header.includes(',')) throw new DpopProofError('more than one DPoP header');
  // Point 2: a JWS in compact serialization.
  if (!/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(header)) throw new DpopProofError('the DPoP proof is not a JWT');
  let protectedHeader: ReturnType<typeof decodeProtectedHeader>;
  try {
    protectedHeader = decodeProtectedHeader(header);
  } catch {
    throw new DpopProofError('the DPoP proof header is not JSON');
  }
  // Points 4 to 7: typ, an allowed asymmetric alg, a public key in jwk.
  if (protectedHeader.typ !== 'dpop+jwt') throw new DpopProofError('the DPoP proof typ is not dpop+jwt');
  if (typeof protectedHeader.alg !== 'string' || !options.algorithms.includes(protectedHeader.alg)) throw new DpopProofError('the DPoP proof alg is not allowed');
  const jwk = protectedHeader.jwk as JWK | undefined;
  if (jwk === undefined || typeof jwk !== 'object' || jwk === null || Array.isArray(jwk)) throw new DpopProofError('the DPoP proof has no jwk');
  if (jwk.kty === 'oct' || PRIVATE_MEMBERS.some((member) => member in jwk)) throw new DpopProofError('the DPoP proof jwk is not a public key');
  let payload: Uint8Array;
  try {
    // Point 8: the signature, by the key in the header; EmbeddedJWK refuses a private key too.
    ({ payload } = await compactVerify(header, EmbeddedJWK, { algorithms: [...options.algorithms] }));
  } catch {
    throw new DpopProofError('the DPoP proof signature does not verify');
  }
  let claims: Record<string, unknown>;
  try {
    claims = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(payload)) as Record<string, unknown>;
  } catch {
    throw new DpopProofError('the DPoP proof claims are not JSON');
  }
  if (claims === null || typeof claims !== 'object' || Array.isArray(claims)) throw new DpopProofError('the DPoP proof claims are not a JSON object');
  // Point 3: the required claims.
  const { jti, htm, htu, iat, ath } = claims;
  if (typeof jti !== 'string' || jti === '' || jti.length > 256) throw new DpopProofError('the DPoP proof has no usable jti');
  if (typeof htm !== 'string' || typeof htu !== 'string' || typeof iat !== 'number' || !Number.isFinite(iat)) throw new DpopProofError('the DPoP proof lacks htm, htu or iat');
  // Points 9 to 11: htm, htu, iat.
  if (htm !== request.method) throw new DpopProofError('the DPoP proof htm is not the request method');
  const expected = normalizeHtu(request.url);
  if (expected === null || normalizeHtu(htu) !== expected) throw new DpopProofError('the DPoP proof htu is not the request URL');
  if (iat * 1000 < now - options.maxAgeMs) throw new DpopProofError('the DPoP proof is too old (iat)');
  if (iat * 1000 > now + options.maxSkewMs) throw new DpopProofError('the DPoP proof iat is in the future');
  // Point 12 (§7.1): the proof is made for this token.
  if (typeof ath !== 'string' || ath !== accessTokenHash(request.token)) throw new DpopProofError('the DPoP proof ath does not match the access token');
  return { jkt: await calculateJwkThumbprint(jwk, 'sha256'), jti, iat };
}

/**
 * The proofs seen lately (RFC 9449 §11.1), keyed by SHA-256 of the key's thumbprint and the
 * `jti` (one client's `jti` cannot block another's), each kept until its `iat` leaves the window,
 * after which the proof is refused as too old anyway. In memory, per process: bounded in entries,
 * the ones nearest to leaving the window dropped first when full.
 */
export class ProofReplayCache {
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly maxEntries: number,
    private readonly windowMs: number,
  ) {}

  /** Whether this proof is new (and now remembered); false for one seen within the window. */
  firstTime(proof: CheckedProof, now: number): boolean {
    const key = createHash('sha256').update(`${proof.jkt}\u0000${proof.jti}`).digest('base64url');
    const until = this.seen.get(key);
    if (until !== undefined && until > now) return false;
    this.seen.delete(key);
    this.seen.set(key, proof.iat * 1000 + this.windowMs);
    // Insertion order is close to expiry order (iat within the window of now): sweep from the front.
    for (const [oldest, expires] of this.seen) {
      if (this.seen.size <= this.maxEntries && expires > now) break;
      this.seen.delete(oldest);
    }
    return true;
  }

  get size(): number {
    return this.seen.size;
  }
}
