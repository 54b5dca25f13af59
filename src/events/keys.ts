import { createPrivateKey, type JsonWebKeyInput, type KeyObject } from 'node:crypto';
import type { JWK } from 'jose';
import { isPublished, KEY_ROTATION_MS, newSigningKey, RETIRED_KEY_PUBLISHED_MS, SET_ALG, SET_ALGS, type SetAlg } from '../engine/signing-keys.js';
import type { AuditEntry, SigningKeyRecord, SigningKeyStore } from '../store/store.js';

/** How long a process signs with the current key it read before reading the store again. */
const CURRENT_KEY_TTL_MS = 5_000;

/** A key ready to sign with. */
export interface SigningKey {
  kid: string;
  /** Its JWS `alg` (the SET header's). */
  alg: SetAlg;
  /** The private key as node:crypto signs with it (set.ts): a quarter of WebCrypto's cost per SET. */
  key: KeyObject;
}

/** A public key as the JWKS publishes it. */
export type PublicJwk = JWK & { kid: string; alg: string; use: 'sig' };

/**
 * The keys SETs are signed with (docs/events.md), kept in the store so that every node signs with
 * the same current key and publishes the same JWKS: one current key per algorithm (ES256, and
 * RS256 for the streams that ask for it). Rotation adds a new current key of an algorithm; the
 * retired one stays in the JWKS for {@link RETIRED_KEY_PUBLISHED_MS}, then is deleted.
 */
export class SigningKeys {
  private readonly cached = new Map<SetAlg, { at: number; key: SigningKey }>();

  /**
   * `rotationAudit`: the audit line of a rotation {@link ensureCurrent} makes by itself (the key 90
   * days old), written by the store with the new key (serve's names its node). Not for the first
   * key, nor for an operator's rotation (engine/signing-keys.ts writes that one).
   */
  constructor(
    private readonly store: SigningKeyStore,
    private readonly now: () => number = Date.now,
    private readonly rotationAudit?: (key: SigningKeyRecord) => AuditEntry,
  ) {}

  /**
   * Makes sure there is a current key of `alg` (serve's start: of several nodes starting at once,
   * one key wins) and rotates it when older than {@link KEY_ROTATION_MS}. Returns the current
   * key's kid. A rotation the store refuses is a {@link KeyRotationError}: the old key stays current.
   */
  async ensureCurrent(alg: SetAlg = SET_ALG): Promise<string> {
    let current = await this.currentRecord(alg);
    if (!current) {
      await this.store.addSigningKey(await newSigningKey(this.now(), alg), null, {});
      current = await this.currentRecord(alg);
    } else if (this.now() - current.createdAt >= KEY_ROTATION_MS) {
      // Only while the old key is still current: of several nodes due at once, one rotates.
      const key = await newSigningKey(this.now(), alg);
      const old = current.kid;
      await this.store.addSigningKey(key, old, { audit: this.rotationAudit?.(key) }).catch((err: unknown) => {
        throw new KeyRotationError(old, err);
      });
      this.cached.delete(alg);
      current = await this.currentRecord(alg);
    }
    if (!current) throw new Error('no current signing key after adding one');
    return current.kid;
  }

  /** {@link ensureCurrent} for every algorithm (serve's start and housekeeping): the JWKS publishes a key of each. */
  async ensureAll(): Promise<string[]> {
    const kids: string[] = [];
    for (const alg of SET_ALGS) kids.push(await this.ensureCurrent(alg));
    return kids;
  }

  /** The key to sign with now: the store's current key of `alg`, read again every few seconds. */
  async current(alg: SetAlg = SET_ALG): Promise<SigningKey> {
    const now = this.now();
    const cached = this.cached.get(alg);
    if (cached && now - cached.at < CURRENT_KEY_TTL_MS) return cached.key;
    let record = await this.currentRecord(alg);
    if (!record) {
      await this.ensureCurrent(alg);
      record = await this.currentRecord(alg);
      if (!record) throw new Error(`no current ${alg} signing key`);
    }
    if (cached?.key.kid !== record.kid) {
      const key = { kid: record.kid, alg, key: createPrivateKey({ key: JSON.parse(record.privateJwk) as JsonWebKeyInput['key'], format: 'jwk' }) };
      this.cached.set(alg, { at: now, key });
      return key;
    }
    cached.at = now;
    return cached.key;
  }

  /** The JWKS (RFC 7517 §5): the current key and the keys retired less than 7 days ago. Read per call: it must name every key any node signs with. */
  async jwks(): Promise<{ keys: PublicJwk[] }> {
    const now = this.now();
    let keys = (await this.store.listSigningKeys()).filter((k) => isPublished(k, now));
    if (keys.length === 0) {
      // No key yet (a server started without serve's start-up, as tests do): make the first one.
      await this.ensureCurrent();
      keys = (await this.store.listSigningKeys()).filter((k) => isPublished(k, now));
    }
    return { keys: keys.map((k) => JSON.parse(k.publicJwk) as PublicJwk) };
  }

  /**
   * Housekeeping: rotation when due (ES256's key, and each other algorithm's that has one: serve's
   * start made them, and a stream that asks for one makes it), and keys out of the JWKS deleted.
   * Returns how many were deleted.
   */
  async maintain(): Promise<number> {
    for (const alg of SET_ALGS) if (alg === SET_ALG || (await this.currentRecord(alg))) await this.ensureCurrent(alg);
    return this.store.deleteRetiredKeys(this.now() - RETIRED_KEY_PUBLISHED_MS);
  }

  private async currentRecord(alg: SetAlg): Promise<SigningKeyRecord | undefined> {
    // A key without an alg of its own is from before RS256: ES256 (migration 4 always wrote it).
    return (await this.store.listSigningKeys()).find((k) => k.retiredAt === null && (k.alg || SET_ALG) === alg);
  }
}

/** The store refused a rotation of the current key (90 days old): that key stays current and signs. */
export class KeyRotationError extends Error {
  constructor(
    readonly kid: string,
    cause: unknown,
  ) {
    // The cause's text in the message, not as `cause`: the log's serializer would add it again.
    super(`could not rotate signing key ${kid} (90 days old): ${cause instanceof Error ? cause.message : String(cause)}; SETs are signed with it until a rotation succeeds`);
    this.name = 'KeyRotationError';
  }
}

/** What serve logs of a {@link KeyRotationError} (at start, and in the deliverer's housekeeping after). */
export const KEY_ROTATION_REFUSED = 'security events: the signing key is 90 days old and could not be rotated; SETs are signed with it meanwhile';
