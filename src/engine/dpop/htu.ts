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
