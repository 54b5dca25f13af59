import { createPrivateKey, type JsonWebKeyInput, type KeyObject } from 'node:crypto';
import type { JWK } from 'jose';
import { isPublished, KEY_ROTATION_MS, newSigningKey, RETIRED_KEY_PUBLISHED_MS } from '../engine/signing-keys.js';
import type { AuditEntry, SigningKeyRecord, SigningKeyStore } from '../store/store.js';

/** How long a process signs with the current key it read before reading the store again. */
const CURRENT_KEY_TTL_MS = 5_000;

/** A key ready to sign with. */
export interface SigningKey {
  kid: string;
  /** The private key as node:crypto signs with it (set.ts): a quarter of WebCrypto's cost per SET. */
  key: KeyObject;
}

/** A public key as the JWKS publishes it. */
export type PublicJwk = JWK & { kid: string; alg: string; use: 'sig' };

/**
 * The keys SETs are signed with (docs/events.md), kept in the store so that every node signs with
 * the same current key and publishes the same JWKS. Rotation adds a new current key; the retired
 * one stays in the JWKS for {@link RETIRED_KEY_PUBLISHED_MS}, then is deleted.
 */
export class SigningKeys {
  private cached: { at: number; key: SigningKey } | undefined;

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
   * Makes sure there is a current key (serve's start: of several nodes starting at once, one key
   * wins) and rotates it when older than {@link KEY_ROTATION_MS}. Returns the current key's kid.
   * A rotation the store refuses is a {@link KeyRotationError}: the old key stays current.
   */
  async ensureCurrent(): Promise<string> {
    let current = await this.currentRecord();
    if (!current) {
      await this.store.addSigningKey(await newSigningKey(this.now()), null, {});
      current = await this.currentRecord();
    } else if (this.now() - current.createdAt >= KEY_ROTATION_MS) {
      // Only while the old key is still current: of several nodes due at once, one rotates.
      const key = await newSigningKey(this.now());
      const old = current.kid;
      await this.store.addSigningKey(key, old, { audit: this.rotationAudit?.(key) }).catch((err: unknown) => {
        throw new KeyRotationError(old, err);
      });
      this.cached = undefined;
      current = await this.currentRecord();
    }
    if (!current) throw new Error('no current signing key after adding one');
    return current.kid;
  }

  /** The key to sign with now: the store's current key, read again every few seconds. */
  async current(): Promise<SigningKey> {
    const now = this.now();
    if (this.cached && now - this.cached.at < CURRENT_KEY_TTL_MS) return this.cached.key;
    let record = await this.currentRecord();
    if (!record) {
      await this.ensureCurrent();
      record = await this.currentRecord();
      if (!record) throw new Error('no current signing key');
    }
    if (this.cached?.key.kid !== record.kid) {
      this.cached = { at: now, key: { kid: record.kid, key: createPrivateKey({ key: JSON.parse(record.privateJwk) as JsonWebKeyInput['key'], format: 'jwk' }) } };
    } else {
      this.cached.at = now;
    }
    return this.cached.key;
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

  /** Housekeeping: rotation when due, and keys out of the JWKS deleted. Returns how many were deleted. */
  async maintain(): Promise<number> {
    await this.ensureCurrent();
    return this.store.deleteRetiredKeys(this.now() - RETIRED_KEY_PUBLISHED_MS);
  }

  private async currentRecord(): Promise<SigningKeyRecord | undefined> {
    return (await this.store.listSigningKeys()).find((k) => k.retiredAt === null);
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
