import { createPrivateKey, createPublicKey, randomUUID, type KeyObject } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, SignJWT, type JWK } from 'jose';

/**
 * The client side of DPoP (RFC 9449 §4): a private key the CLI proves possession of, and the
 * proofs it signs for each token request. The private key never leaves this module: what is
 * shown is its RFC 7638 thumbprint, the `cnf.jkt` a server binds tokens to.
 */
export interface DpopKey {
  /** The JWS algorithm of its proofs. */
  alg: string;
  /** RFC 7638 SHA-256 thumbprint of the public key, base64url. */
  jkt: string;
  /** Where it came from: a file's path, or `generated`. */
  source: string;
  /** A proof for one request (§4.2): `htu` without query and fragment, `nonce` when the server asked for one (§8). */
  proof(htm: string, htu: URL, nonce?: string): Promise<string>;
}

/** A key file that cannot be used: the message says why, never what is in it. */
export class DpopKeyError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'DpopKeyError';
  }
}

/** What a key of each type signs with: the first of RFC 9449's usual algorithms that fits it. */
function algorithmFor(key: KeyObject): string {
  const type = key.asymmetricKeyType;
  if (type === 'ec') {
    const curve = key.asymmetricKeyDetails?.namedCurve;
    const alg = curve === 'prime256v1' ? 'ES256' : curve === 'secp384r1' ? 'ES384' : curve === 'secp521r1' ? 'ES512' : undefined;
    if (alg) return alg;
    throw new DpopKeyError(`an EC key on ${curve ?? 'an unknown curve'}: DPoP takes P-256, P-384 or P-521`);
  }
  if (type === 'rsa') return 'PS256';
  if (type === 'rsa-pss') return 'PS256';
  if (type === 'ed25519') return 'EdDSA';
  throw new DpopKeyError(`a ${type ?? 'symmetric'} key: DPoP needs an EC (P-256/384/521), RSA or Ed25519 private key`);
}

/**
 * `--dpop-key FILE`: a private key as a JWK (JSON, with its `d`) or PEM (PKCS#8, SEC1 or PKCS#1);
 * `generate`: a new P-256 key, in memory only unless `saveTo` names a file to write it to (created
 * with mode 0600, never overwriting one), so that the tokens it binds can be refreshed later.
 */
export async function loadDpopKey(spec: string, saveTo?: string): Promise<DpopKey> {
  if (spec === 'generate') {
    const { privateKey } = await generateKeyPair('ES256', { extractable: true });
    const jwk = await exportJWK(privateKey);
    if (saveTo !== undefined) {
      try {
        writeFileSync(saveTo, JSON.stringify({ ...jwk, alg: 'ES256' }) + '\n', { mode: 0o600, flag: 'wx' });
      } catch (err) {
        throw new DpopKeyError(`cannot write the new DPoP key to ${saveTo}: ${(err as NodeJS.ErrnoException).code === 'EEXIST' ? 'the file exists (it is never overwritten)' : (err as Error).message}`, { cause: err });
      }
    }
    return fromKeyObject(createPrivateKey({ key: jwk as import('node:crypto').JsonWebKey, format: 'jwk' }), 'ES256', saveTo ?? 'generated');
  }
  if (saveTo !== undefined) throw new DpopKeyError('--dpop-key-out goes with --dpop-key generate');
  let text: string;
  try {
    text = readFileSync(spec, 'utf8');
  } catch (err) {
    throw new DpopKeyError(`cannot read the DPoP key ${spec}: ${(err as Error).message}`, { cause: err });
  }
  let key: KeyObject;
  let alg: string | undefined;
  try {
    if (text.trimStart().startsWith('{')) {
      const jwk = JSON.parse(text) as JWK;
      if (typeof jwk.d !== 'string') throw new DpopKeyError(`${spec} is a public JWK: DPoP needs the private key (with its "d")`);
      alg = typeof jwk.alg === 'string' ? jwk.alg : undefined;
      key = createPrivateKey({ key: jwk as import('node:crypto').JsonWebKey, format: 'jwk' });
    } else key = createPrivateKey(text);
  } catch (err) {
    if (err instanceof DpopKeyError) throw err;
    // The parser's message may quote the file; only its kind is said.
    throw new DpopKeyError(`${spec} is not a private key as a JWK or PEM`, { cause: err });
  }
  return fromKeyObject(key, alg ?? algorithmFor(key), spec);
}

async function fromKeyObject(privateKey: KeyObject, alg: string, source: string): Promise<DpopKey> {
  if (privateKey.type !== 'private') throw new DpopKeyError(`${source} is not a private key`);
  const expected = algorithmFor(privateKey);
  if (alg !== expected && !(expected === 'PS256' && /^(RS|PS)(256|384|512)$/.test(alg))) throw new DpopKeyError(`${source}: its alg ${alg} does not fit a ${privateKey.asymmetricKeyType} key`);
  const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...rest } = createPublicKey(privateKey).export({ format: 'jwk' }) as JWK;
  const publicJwk: JWK = { ...rest };
  // Checked once here: a key jose cannot sign with fails at load, not in the middle of a request.
  await importJWK(publicJwk, alg);
  const jkt = await calculateJwkThumbprint(publicJwk, 'sha256');
  return {
    alg,
    jkt,
    source,
    proof: (htm, htu, nonce) => {
      const claims: Record<string, string> = { jti: randomUUID(), htm, htu: htu.origin + htu.pathname };
      if (nonce !== undefined) claims.nonce = nonce;
      return new SignJWT(claims).setProtectedHeader({ typ: 'dpop+jwt', alg, jwk: publicJwk }).setIssuedAt().sign(privateKey);
    },
  };
}
