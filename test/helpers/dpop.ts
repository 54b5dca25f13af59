import { createHash, randomUUID } from 'node:crypto';
import { base64url, calculateJwkThumbprint, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';

/*
 * DPoP proofs (RFC 9449 §4.2) made with jose directly, good or bad on purpose, for the tests of
 * the checks at the token endpoint and at a resource server: not the CLI's proof maker, so that
 * the checks are not tested against themselves.
 */

/** A DPoP key pair, its public and private JWKs and the public one's RFC 7638 thumbprint. */
export interface DpopKey {
  privateKey: CryptoKey;
  publicJwk: JWK;
  /** For the tests of a private key put in the header (RFC 9449 §4.3 point 7). */
  privateJwk: JWK;
  alg: string;
  jkt: string;
}

export async function dpopKey(alg = 'ES256'): Promise<DpopKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const publicJwk = await exportJWK(publicKey);
  return { privateKey, publicJwk, privateJwk: await exportJWK(privateKey), alg, jkt: await calculateJwkThumbprint(publicJwk, 'sha256') };
}

/** RFC 9449 §4.2 `ath`: base64url(SHA-256(ASCII(access token))), written here as the RFC says, not imported. */
export const ath = (token: string): string => createHash('sha256').update(token, 'ascii').digest('base64url');

export interface ProofClaims {
  htm?: string;
  htu?: string;
  /** In ms; the proof carries it in seconds. */
  iatMs: number;
  jti?: string;
  ath?: string;
  nonce?: string;
  /** Claims left out, to test a proof without them. */
  omit?: readonly string[];
}

/** A proof signed by `key`; `header` overrides the protected header's members (typ, jwk, alg). */
export async function makeProof(key: DpopKey, claims: ProofClaims, header: Record<string, unknown> = {}): Promise<string> {
  const { iatMs, jti = randomUUID(), htm = 'POST', htu = 'https://auth.example.test/oauth/token', omit = [], ...rest } = claims;
  const payload: Record<string, unknown> = { htm, htu, jti, iat: Math.floor(iatMs / 1000), ...rest };
  for (const name of omit) delete payload[name];
  return new SignJWT(payload)
    .setProtectedHeader({ alg: key.alg, typ: 'dpop+jwt', jwk: key.publicJwk, ...header } as never)
    .sign(key.privateKey);
}

/** A compact JWS by hand: header and claims as given, and `signature` (base64url) as it is; `''` for `alg: none` (RFC 7515 §A.5). */
export function rawProof(header: Record<string, unknown>, claims: Record<string, unknown>, signature: string): string {
  const part = (v: unknown) => base64url.encode(JSON.stringify(v));
  return `${part(header)}.${part(claims)}.${signature}`;
}
