import { calculateJwkThumbprint, exportJWK, generateKeyPair } from 'jose';
import type { AuditEntry, SigningKeyRecord, SigningKeyStore } from '../store/store.js';
import { auditEntry } from './audit.js';
import type { EngineContext } from './context.js';

/** The store ports this module uses (store/ports/). */
type Ports = SigningKeyStore;

/**
 * The lifecycle of the keys security events are signed with (docs/events.md): made, listed and rotated
 * here, kept in the store so that every node signs with the same current key. Signing with them
 * and publishing the JWKS is events/keys.ts's.
 */

/** The JWS algorithm of SETs unless a stream asks for another: ECDSA P-256 with SHA-256. */
export const SET_ALG = 'ES256';
/**
 * The algorithms SETs are signed with: ES256, and RS256 (2048-bit RSA), which the CAEP
 * interoperability profile requires. Each has its own current key; the JWKS publishes both.
 */
export const SET_ALGS = ['ES256', 'RS256'] as const;
export type SetAlg = (typeof SET_ALGS)[number];
export const isSetAlg = (v: unknown): v is SetAlg => typeof v === 'string' && (SET_ALGS as readonly string[]).includes(v);
/** A current key older than this is replaced by a new one (automatic rotation). */
export const KEY_ROTATION_MS = 90 * 24 * 3_600_000;
/** A retired key stays in the JWKS this long, for SETs signed before it was retired. */
export const RETIRED_KEY_PUBLISHED_MS = 7 * 24 * 3_600_000;

/** A key record as `signing-key list` shows it: never the private key. */
export interface SigningKeyView {
  kid: string;
  alg: string;
  createdAt: number;
  retiredAt: number | null;
  /** Whether the JWKS publishes it (current, or retired less than 7 days ago). */
  published: boolean;
  current: boolean;
}

/** What `signing-key rotate` reports: the new current key. */
export interface RotatedSigningKey {
  kid: string;
  alg: SetAlg;
  createdAt: number;
}

/** A new key pair of `alg` (default ES256; RS256 of 2048 bits), its `kid` the RFC 7638 JWK thumbprint of the public key. */
export async function newSigningKey(now: number, alg: SetAlg = SET_ALG): Promise<SigningKeyRecord> {
  const { publicKey, privateKey } = await generateKeyPair(alg, { extractable: true, ...(alg === 'RS256' ? { modulusLength: 2048 } : {}) });
  const pub = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(pub, 'sha256');
  const priv = await exportJWK(privateKey);
  return {
    kid,
    alg,
    privateJwk: JSON.stringify({ ...priv, kid, alg }),
    publicJwk: JSON.stringify({ ...pub, kid, alg, use: 'sig' }),
    createdAt: now,
    retiredAt: null,
  };
}

/** Whether the JWKS publishes a key at `now`: the current one, or one retired less than 7 days ago. */
export function isPublished(k: SigningKeyRecord, now: number): boolean {
  return k.retiredAt === null || now - k.retiredAt < RETIRED_KEY_PUBLISHED_MS;
}

/** Every key of `store`, newest first, without its private part. */
export async function signingKeyViews(store: SigningKeyStore, now: number): Promise<SigningKeyView[]> {
  return (await store.listSigningKeys()).map((k) => ({
    kid: k.kid,
    alg: k.alg,
    createdAt: k.createdAt,
    retiredAt: k.retiredAt,
    published: isPublished(k, now),
    current: k.retiredAt === null,
  }));
}

/** `signing-key list`. */
export function listSigningKeys(ctx: EngineContext<Ports>): Promise<SigningKeyView[]> {
  return signingKeyViews(ctx.store, ctx.clock.now());
}

/**
 * `signing-key rotate [--alg]`: a new current key of `alg` (the other algorithm's key stays), and
 * who made it in the audit log: a new signing key is a security decision, recorded like a
 * receiver's. The key and its audit line commit together.
 */
export async function rotateSigningKey(ctx: EngineContext<Ports>, actor: string, alg: SetAlg = SET_ALG): Promise<RotatedSigningKey> {
  const key = await newSigningKey(ctx.clock.now(), alg);
  await ctx.store.addSigningKey(key, undefined, { audit: keyRotationAudit(actor, key, key.createdAt) });
  return { kid: key.kid, alg, createdAt: key.createdAt };
}

/**
 * The audit line of a rotation: an operator's (`signing-key rotate`), or serve's own when the
 * current key is 90 days old (events/keys.ts, by `serve:<node>`), the same line for both. Handed
 * to the store with the key (SigningKeyStore.addSigningKey), so that neither commits without the other.
 */
export function keyRotationAudit(actor: string, key: Pick<SigningKeyRecord, 'kid' | 'alg'>, at: number): AuditEntry {
  return auditEntry(at, actor, 'signing_key.rotate', `key:${key.kid}`, 1, key.alg);
}
