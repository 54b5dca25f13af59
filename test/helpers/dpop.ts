import { randomUUID } from 'node:crypto';
import { base64url, calculateJwkThumbprint, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';

/** A DPoP key pair (RFC 9449 §4.2), its public JWK and thumbprint. */
export interface DpopKey {
  privateKey: CryptoKey;
  publicJwk: JWK;
  alg: string;
  jkt: string;
}

export async function dpopKey(alg = 'ES256'): Promise<DpopKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const publicJwk = await exportJWK(publicKey);
  return { privateKey, publicJwk, alg, jkt: await calculateJwkThumbprint(publicJwk, 'sha256') };
}

export interface ProofClaims {
  htm?: string;
  htu?: string;
  /** In ms; the proof carries it in seconds. */
  iatMs: number;
  jti?: string;
  ath?: string;
  nonce?: string;
}

/** A proof signed by `key`; `header` overrides the protected header's members (typ, jwk, alg). */
export async function makeProof(key: DpopKey, claims: ProofClaims, header: Record<string, unknown> = {}): Promise<string> {
  const { iatMs, jti = randomUUID(), htm = 'POST', htu = 'https://auth.example.test/oauth/token', ...rest } = claims;
  return new SignJWT({ htm, htu, jti, iat: Math.floor(iatMs / 1000), ...rest })
    .setProtectedHeader({ alg: key.alg, typ: 'dpop+jwt', jwk: key.publicJwk, ...header } as never)
    .sign(key.privateKey);
}

/** A compact JWS by hand: header and claims as given, and `signature` (base64url) as it is. */
export function rawProof(header: Record<string, unknown>, claims: Record<string, unknown>, signature: string): string {
  const part = (v: unknown) => base64url.encode(JSON.stringify(v));
  return `${part(header)}.${part(claims)}.${signature}`;
}
