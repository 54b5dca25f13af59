import { constants, createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';
import { base64url, decodeProtectedHeader, type JWK } from 'jose';
import { DPOP_ALGORITHMS } from '../../resource-server/dpop-rules.js';
import { htuMatches } from './htu.js';

/** How far into the past a proof's `iat` may be (RFC 9449 §11.1: "a reasonably short time window"). */
export const PROOF_MAX_AGE_MS = 60_000;
/** How far into the future, for the clocks of client and server that disagree a little. */
export const PROOF_MAX_SKEW_MS = 5_000;
/** A proof larger than this is refused unread (a JWT with a P-256 or RSA-4096 key fits well within). */
const MAX_PROOF_LENGTH = 8192;
/** The longest `jti` kept: RFC 9449 §4.2 asks for 96 bits of randomness, a UUID is 36 characters. */
const MAX_JTI_LENGTH = 256;
/** Members of a JWK that only a private (or symmetric) key has (RFC 7518 §6.2.2, §6.3.2, §6.4; RFC 8037 §2). */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];

/** Why a proof was refused, in a bounded vocabulary (for metrics and tests; the description says it to the client). */
export type ProofFailure =
  | 'missing'
  | 'multiple'
  | 'malformed'
  | 'typ'
  | 'alg'
  | 'jwk'
  | 'signature'
  | 'htm'
  | 'htu'
  | 'iat'
  | 'jti'
  | 'ath'
  | 'nonce'
  | 'replayed'
  | 'key_mismatch'
  | 'required';

/** A DPoP proof that does not hold (RFC 9449 §4.3), with the reason. */
export class DpopProofError extends Error {
  constructor(
    readonly reason: ProofFailure,
    message: string,
  ) {
    super(message);
    this.name = 'DpopProofError';
  }
}

/** What a proof is checked against: the request it came with. */
export interface ProofExpectations {
  /** The request's method (`htm`, §4.3 point 8). */
  method: string;
  /** The URL of the endpoint as the server names it (`htu`, §4.3 point 9). */
  url: string;
  /** The access token presented with the proof, at a resource (`ath`, §4.3 point 12, §7.1). */
  accessToken?: string;
  /** The check of the proof's `nonce` (§8, §9), when the server hands out nonces. */
  nonce?: (nonce: string | undefined) => void;
}

/** A proof that holds: the key's thumbprint and what is needed to refuse its replay. */
export interface VerifiedProof {
  /** RFC 7638 SHA-256 thumbprint of the proof's public key, base64url (`cnf.jkt`, §6.1). */
  jkt: string;
  jti: string;
  /** The proof's `iat`, in ms. */
  issuedAt: number;
  /** The key a replay cache keeps it under: SHA-256 of the thumbprint and the `jti`, base64url. */
  replayKey: string;
  /** Until when the proof must be remembered: past it, its `iat` is outside the window anyway. */
  replayUntil: number;
}

/**
 * The `DPoP` header values of a request, as Node gives them (a repeated header arrives joined by
 * commas, which a compact JWS never holds): the one proof, or a {@link DpopProofError}. Undefined
 * when the request carries none.
 */
export function singleProof(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  const values = Array.isArray(header) ? header : [header];
  // §4.3 point 1: "there is not more than one DPoP HTTP request header field".
  if (values.length !== 1 || values[0]!.includes(',')) throw new DpopProofError('multiple', 'A request may carry one DPoP header only (RFC 9449 §4.3)');
  const proof = values[0]!.trim();
  if (proof === '') throw new DpopProofError('malformed', 'The DPoP header is empty');
  return proof;
}

/**
 * RFC 9449 §4.3, every point but the replay (which needs the caller's store: keep `replayKey`
 * until `replayUntil`): the proof is a JWT (point 2) of `typ` `dpop+jwt` (4), signed with an
 * allowed asymmetric algorithm (5) by the public key in its `jwk` header (6, 7), for this method
 * (8) and URL (9), with a nonce when the server asks for one (10), issued within the window at
 * `now` (11), and with the hash of the access token it comes with (12). `now` is the caller's clock.
 */
export async function verifyProof(proof: string, expect: ProofExpectations, now: number, algorithms: readonly string[] = DPOP_ALGORITHMS): Promise<VerifiedProof> {
  if (proof.length > MAX_PROOF_LENGTH || !/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(proof)) {
    throw new DpopProofError('malformed', 'The DPoP proof is not a signed JWT in compact form');
  }
  let header: ReturnType<typeof decodeProtectedHeader>;
  try {
    header = decodeProtectedHeader(proof);
  } catch {
    throw new DpopProofError('malformed', 'The DPoP proof header is not JSON');
  }
  if (header.typ !== 'dpop+jwt') throw new DpopProofError('typ', 'The DPoP proof must have typ "dpop+jwt"');
  // RFC 7515 §4.1.11: no extension is understood here, so none may be critical.
  if (header.crit !== undefined) throw new DpopProofError('malformed', 'The DPoP proof names critical header parameters this server does not process');
  const alg = header.alg;
  if (typeof alg !== 'string' || !algorithms.includes(alg)) {
    throw new DpopProofError('alg', `The DPoP proof's alg must be one of ${algorithms.join(', ')}`);
  }
  const jwk = publicJwk(header.jwk);
  const jkt = jwkThumbprint(jwk);
  const dot = proof.lastIndexOf('.');
  if (!signatureHolds(alg, keyOf(jkt, jwk), proof.slice(0, dot), proof.slice(dot + 1))) {
    throw new DpopProofError('signature', 'The DPoP proof signature does not verify with the key in its header');
  }
  const claims = parseClaims(base64url.decode(proof.slice(proof.indexOf('.') + 1, dot)));
  if (claims.htm !== expect.method) throw new DpopProofError('htm', `The DPoP proof's htm must be ${expect.method}`);
  if (typeof claims.htu !== 'string' || !htuMatches(claims.htu, expect.url)) throw new DpopProofError('htu', `The DPoP proof's htu must be ${expect.url}`);
  const jti = claims.jti;
  if (typeof jti !== 'string' || jti === '' || jti.length > MAX_JTI_LENGTH) throw new DpopProofError('jti', 'The DPoP proof must have a jti');
  const iat = claims.iat;
  if (typeof iat !== 'number' || !Number.isFinite(iat)) throw new DpopProofError('iat', 'The DPoP proof must have an iat');
  const issuedAt = Math.floor(iat * 1000);
  if (issuedAt < now - PROOF_MAX_AGE_MS || issuedAt > now + PROOF_MAX_SKEW_MS) {
    throw new DpopProofError('iat', `The DPoP proof's iat is not within ${PROOF_MAX_AGE_MS / 1000} s of the server's time`);
  }
  if (expect.accessToken !== undefined && claims.ath !== accessTokenHash(expect.accessToken)) {
    throw new DpopProofError('ath', "The DPoP proof's ath is not the hash of the access token presented");
  }
  expect.nonce?.(typeof claims.nonce === 'string' ? claims.nonce : undefined);
  return { jkt, jti, issuedAt, replayKey: replayKey(jkt, jti), replayUntil: issuedAt + PROOF_MAX_AGE_MS + PROOF_MAX_SKEW_MS };
}

/**
 * RFC 9449 §4.2 `ath`: the base64url SHA-256 of the ASCII access token, which a proof sent to a
 * resource with that token must carry (a resource server checks it; §7.1).
 */
export function accessTokenHash(accessToken: string): string {
  return base64url.encode(createHash('sha256').update(accessToken, 'ascii').digest());
}

/** The replay cache's key of a proof: one client's `jti` never collides with another key's. */
export function replayKey(jkt: string, jti: string): string {
  return createHash('sha256').update(`${jkt}.${jti}`).digest('base64url');
}

/**
 * RFC 7515 §5.2 with node:crypto, synchronously: jose's verification goes through WebCrypto,
 * whose key import and verify hop to a thread each, and measured several times the signature's
 * own cost (bench/micro/dpop-proof.js). The key must be of the algorithm's type (RFC 7518 §3).
 */
function signatureHolds(alg: string, key: KeyObject, input: string, signature: string): boolean {
  const type = key.asymmetricKeyType;
  const data = Buffer.from(input, 'ascii');
  const sig = Buffer.from(signature, 'base64url');
  try {
    switch (alg) {
      case 'ES256':
        return type === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1' && verify('sha256', data, { key, dsaEncoding: 'ieee-p1363' }, sig);
      case 'RS256':
        return type === 'rsa' && (key.asymmetricKeyDetails?.modulusLength ?? 0) >= 2048 && verify('sha256', data, key, sig);
      case 'PS256':
        return type === 'rsa' && (key.asymmetricKeyDetails?.modulusLength ?? 0) >= 2048 && verify('sha256', data, { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 }, sig);
      case 'EdDSA':
      case 'Ed25519':
        return type === 'ed25519' && verify(null, data, key, sig);
      default:
        return false;
    }
  } catch {
    return false;
  }
}

/** The most keys kept imported: a client signs its proofs with one key, so most proofs find theirs. */
const KEYS_KEPT = 1000;
const imported = new Map<string, KeyObject>();

/**
 * The key of `jwk`, imported once per thumbprint (which covers every member that makes the public
 * key: RFC 7638 §3.2): importing a JWK costs about what verifying a signature does.
 */
function keyOf(jkt: string, jwk: JWK): KeyObject {
  let key = imported.get(jkt);
  if (key !== undefined) return key;
  try {
    key = createPublicKey({ key: jwk as never, format: 'jwk' });
  } catch {
    throw new DpopProofError('jwk', 'The DPoP proof key is not a valid public key');
  }
  if (imported.size >= KEYS_KEPT) imported.delete(imported.keys().next().value!);
  imported.set(jkt, key);
  return key;
}

/** RFC 7638 §3: the SHA-256 of the key's required members in lexicographic order, base64url. */
export function jwkThumbprint(jwk: JWK): string {
  const members = jwk.kty === 'EC' ? { crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y } : jwk.kty === 'RSA' ? { e: jwk.e, kty: jwk.kty, n: jwk.n } : { crv: jwk.crv, kty: jwk.kty, x: jwk.x };
  return createHash('sha256').update(JSON.stringify(members)).digest('base64url');
}

/** §4.3 point 7: the `jwk` header is a public key, not a private or symmetric one. */
function publicJwk(jwk: unknown): JWK {
  if (jwk === null || typeof jwk !== 'object' || Array.isArray(jwk)) throw new DpopProofError('jwk', 'The DPoP proof must carry its public key in the jwk header');
  const k = jwk as Record<string, unknown>;
  if (k.kty !== 'EC' && k.kty !== 'RSA' && k.kty !== 'OKP') throw new DpopProofError('jwk', 'The DPoP proof key must be an EC, RSA or OKP public key');
  if (PRIVATE_MEMBERS.some((m) => m in k)) throw new DpopProofError('jwk', 'The DPoP proof key must be a public key: it carries a private member');
  return k as JWK;
}

function parseClaims(payload: Uint8Array): Record<string, unknown> {
  let claims: unknown;
  try {
    claims = JSON.parse(new TextDecoder().decode(payload));
  } catch {
    throw new DpopProofError('malformed', 'The DPoP proof claims are not JSON');
  }
  if (claims === null || typeof claims !== 'object' || Array.isArray(claims)) throw new DpopProofError('malformed', 'The DPoP proof claims are not a JSON object');
  return claims as Record<string, unknown>;
}
