import { createHash } from 'node:crypto';
import { sameInConstantTime } from '../secrets.js';

/** RFC 7636 §4.1 code_verifier and §4.2 code_challenge (S256: 43 characters): unreserved characters, 43 to 128 of them. */
const PKCE_VALUE = /^[A-Za-z0-9\-._~]{43,128}$/;

export function isPkceValue(value: string): boolean {
  return PKCE_VALUE.test(value);
}

/** RFC 7636 §4.2: BASE64URL(SHA256(ASCII(code_verifier))). */
export function s256(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url');
}

/** RFC 7636 §4.6: whether `verifier` is the one `challenge` was made from (compared in constant time). */
export function verifierMatches(verifier: string, challenge: string): boolean {
  if (!isPkceValue(verifier)) return false;
  return sameInConstantTime(s256(verifier), challenge);
}
