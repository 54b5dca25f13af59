import type { Trail } from '../trail.js';
import type { SigningKeyRecord } from '../event-records.js';

/**
 * The keys Security Event Tokens are signed with (RFC 8417 §5, RFC 7515), kept in the store so
 * that every node signs with the same current key and publishes the same JWKS.
 */
export interface SigningKeyStore {
  /** Every signing key, newest first. */
  listSigningKeys(): Promise<SigningKeyRecord[]>;
  /**
   * Adds `key` as the current key of its `alg` (one current key per algorithm: ES256 and RS256)
   * and retires the previous current one of that alg at `key.createdAt`, in one transaction.
   * With `ifCurrent`, only when the current key of that alg is that kid (a rotation because it is
   * old, by several nodes at once: one wins), or with null only when there is none (start-up of
   * several nodes at once: one key wins). With the trail's `audit`, that line is appended in the same
   * transaction when the key is added: a rotation and its audit line commit together or not at
   * all. Returns false when it did nothing.
   */
  addSigningKey(key: SigningKeyRecord, ifCurrent: string | null | undefined, trail: Trail): Promise<boolean>;
  /** Deletes keys retired before `before` (they are out of the JWKS). Returns how many. */
  deleteRetiredKeys(before: number): Promise<number>;
}
