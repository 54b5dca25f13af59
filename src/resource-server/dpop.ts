import { createHash } from 'node:crypto';
import { calculateJwkThumbprint, compactVerify, decodeProtectedHeader, EmbeddedJWK, type JWK } from 'jose';
import { htuMatches } from './dpop-rules.js';

/**
 * A resource server's check of a DPoP proof (RFC 9449 §4.3 and §7.1): the `DPoP` header that
 * comes with `Authorization: DPoP <token>`. Everything that can be checked without tokenctl is
 * checked here; the key's thumbprint is then compared with the token's introspected `cnf.jkt`.
 */

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
  if (!htuMatches(htu, request.url)) throw new DpopProofError('the DPoP proof htu is not the request URL');
  if (iat * 1000 < now - options.maxAgeMs) throw new DpopProofError('the DPoP proof is too old (iat)');
  if (iat * 1000 > now + options.maxSkewMs) throw new DpopProofError('the DPoP proof iat is in the future');
  // Point 12 (§7.1): the proof is made for this token.
  if (typeof ath !== 'string' || ath !== accessTokenHash(request.token)) throw new DpopProofError('the DPoP proof ath does not match the access token');
  return { jkt: await calculateJwkThumbprint(jwk, 'sha256'), jti, iat };
}
