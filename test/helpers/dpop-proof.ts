import { createHash, randomUUID } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';

/**
 * DPoP proofs (RFC 9449 §4.2) made with jose directly, good or bad on purpose, for the tests of
 * the checks: not the CLI's proof maker, so that the checks are not tested against themselves.
 */
export interface ProofKey {
  privateKey: CryptoKey;
  publicJwk: JWK;
  privateJwk: JWK;
  jkt: string;
  alg: string;
}

export async function proofKey(alg = 'ES256'): Promise<ProofKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const publicJwk = await exportJWK(publicKey);
  return { privateKey, publicJwk, privateJwk: await exportJWK(privateKey), jkt: await calculateJwkThumbprint(publicJwk, 'sha256'), alg };
}

export const ath = (token: string): string => createHash('sha256').update(token, 'ascii').digest('base64url');

export interface ProofClaims {
  htm: string;
  htu: string;
  /** The access token, for `ath`; absent at the token endpoint. */
  token?: string;
  /** Seconds; default now. */
  iat?: number;
  jti?: string;
  nonce?: string;
  /** Replace or remove (undefined) claims. */
  override?: Record<string, unknown>;
  /** Header members to replace (typ, jwk, alg). */
  header?: Record<string, unknown>;
}

export async function makeProof(key: ProofKey, c: ProofClaims): Promise<string> {
  const claims: Record<string, unknown> = { jti: c.jti ?? randomUUID(), htm: c.htm, htu: c.htu, iat: c.iat ?? Math.floor(Date.now() / 1000) };
  if (c.token !== undefined) claims.ath = ath(c.token);
  if (c.nonce !== undefined) claims.nonce = c.nonce;
  for (const [name, value] of Object.entries(c.override ?? {})) {
    if (value === undefined) delete claims[name];
    else claims[name] = value;
  }
  return new SignJWT(claims).setProtectedHeader({ typ: 'dpop+jwt', alg: key.alg, jwk: key.publicJwk, ...c.header } as never).sign(key.privateKey);
}

/** A JWS with `alg: none` (RFC 7515 §A.5): header and claims, no signature. */
export function unsignedProof(key: ProofKey, c: ProofClaims): string {
  const enc = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const claims = { jti: randomUUID(), htm: c.htm, htu: c.htu, iat: Math.floor(Date.now() / 1000), ...(c.token !== undefined && { ath: ath(c.token) }) };
  return `${enc({ typ: 'dpop+jwt', alg: 'none', jwk: key.publicJwk })}.${enc(claims)}.`;
}
