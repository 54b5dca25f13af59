/*
 * The DPoP rules (RFC 9449) that tokenctl's token endpoint (src/engine/dpop/) and the
 * resource-server module both apply, in one place so that they cannot disagree: the proof
 * algorithms and the comparison of `htu`. It imports nothing, so that the module's package,
 * built from this folder alone, carries it, and the engine may import it (eslint.config.js).
 */

/**
 * The signature algorithms a proof may use (RFC 9449 §4.3 point 5: "an asymmetric digital
 * signature algorithm", never `none`, never a MAC): the metadata's
 * `dpop_signing_alg_values_supported`, what the token endpoint verifies, and the resource-server
 * module's default. `Ed25519` is RFC 9864's name for what `EdDSA` names with an Ed25519 key,
 * which oauth4webapi sends.
 */
export const DPOP_ALGORITHMS: readonly string[] = Object.freeze(['ES256', 'RS256', 'PS256', 'EdDSA', 'Ed25519']);

/**
 * RFC 9449 §4.3 point 9: the `htu` of a proof is compared with the URL of the request "without
 * query and fragment parts", after syntax-based normalisation (RFC 3986 §6.2.2: scheme and host in
 * lower case, percent escapes in upper case and unreserved ones decoded, dot segments removed) and
 * scheme-based normalisation (§6.2.3: the default port dropped, an empty path as `/`). WHATWG URL
 * parsing does all of that but decoding the unreserved escapes, which is done here.
 * Returns null for a string that is not an absolute http(s) URL.
 */
export function normaliseHtu(url: string): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') return null;
  if (u.username !== '' || u.password !== '') return null;
  const path = u.pathname.replace(/%([0-9A-Fa-f]{2})/g, (escape, hex: string) => {
    const c = String.fromCharCode(parseInt(hex, 16));
    return /[A-Za-z0-9\-._~]/.test(c) ? c : `%${hex.toUpperCase()}`;
  });
  return `${u.protocol}//${u.host}${path}`;
}

/** Whether a proof's `htu` names `expected` (both normalised; query and fragment left out). */
export function htuMatches(htu: string, expected: string): boolean {
  const a = normaliseHtu(htu);
  return a !== null && a === normaliseHtu(expected);
}
