/** An RFC 7638 SHA-256 thumbprint in base64url without padding: 32 bytes, 43 characters. */
const JKT = /^[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]$/;

/** Whether `value` can be a `dpop_jkt` (RFC 9449 §10: "the JWK SHA-256 Thumbprint … of the DPoP public key"). */
export function isDpopJkt(value: string): boolean {
  return JKT.test(value);
}
