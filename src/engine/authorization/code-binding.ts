import type { TokenBinding } from '../dpop/binding.js';
import { InvalidDpopProofError } from '../errors.js';

/** An RFC 7638 SHA-256 thumbprint in base64url without padding: 32 bytes, 43 characters. */
const JKT = /^[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]$/;

/** Whether `value` can be a `dpop_jkt` (RFC 9449 §10: "the JWK SHA-256 Thumbprint … of the DPoP public key"). */
export function isDpopJkt(value: string): boolean {
  return JKT.test(value);
}

/**
 * RFC 9449 §10: a code whose authorization request named `dpop_jkt` is redeemed only with a proof
 * by that key; without one, or with another key, nothing is issued.
 */
export function checkCodeBinding(dpopJkt: string | null, binding: TokenBinding): void {
  if (dpopJkt === null || dpopJkt === binding.jkt) return;
  if (binding.jkt === null) throw new InvalidDpopProofError('required', 'The authorization code is bound to a DPoP key (dpop_jkt): the token request needs a DPoP proof made with it (RFC 9449 §10)');
  throw new InvalidDpopProofError('key_mismatch', 'The DPoP proof is not made with the key the authorization request named in dpop_jkt (RFC 9449 §10)');
}
