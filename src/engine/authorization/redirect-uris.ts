import { InvalidInputError } from '../errors.js';

/**
 * Redirect URIs (RFC 6749 §3.1.2): what may be registered, and how a presented one is matched.
 * Matching is exact string comparison (RFC 9700 §4.1.3), except that a loopback URI matches with
 * any port (RFC 8252 §7.3: a native app picks a free port at each login).
 */

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/** The longest redirect URI accepted: longer ones are a mistake or an attack on the page. */
export const MAX_REDIRECT_URI_LENGTH = 2000;

function parse(uri: string): URL | null {
  try {
    return new URL(uri);
  } catch {
    return null;
  }
}

/** Whether `url` is an `http:` URL on a loopback host (RFC 8252 §7.3, §8.3). */
function isLoopbackHttp(url: URL): boolean {
  return url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
}

/**
 * Checks a redirect URI for registration and returns it as registered: absolute, no fragment
 * (RFC 6749 §3.1.2), `https:`, `http:` only on a loopback host (RFC 8252 §8.3), or a private-use
 * scheme in reverse domain form (`com.example.app:/callback`, RFC 8252 §7.1).
 */
export function validateRedirectUri(uri: string): string {
  const fail = (why: string): never => {
    throw new InvalidInputError(`the redirect URI "${uri.slice(0, 100)}" ${why}`);
  };
  if (uri.length > MAX_REDIRECT_URI_LENGTH) fail(`is longer than ${MAX_REDIRECT_URI_LENGTH} characters`);
  // eslint-disable-next-line no-control-regex
  if (/[\s\u0000-\u001f\u007f]/.test(uri)) fail('must not contain spaces or control characters');
  const url = parse(uri);
  if (url === null) fail('is not an absolute URI (RFC 6749 §3.1.2), e.g. https://app.example.com/callback');
  if (uri.includes('#')) fail('must not contain a fragment (RFC 6749 §3.1.2)');
  const { protocol } = url!;
  if (protocol === 'https:') return uri;
  if (protocol === 'http:') {
    if (isLoopbackHttp(url!)) return uri;
    fail('uses http: on a host that is not loopback: use https:, or http://127.0.0.1 for a local app (RFC 8252 §8.3)');
  }
  const scheme = protocol.slice(0, -1);
  if (['javascript', 'data', 'file', 'vbscript', 'blob', 'about', 'ws', 'wss', 'ftp'].includes(scheme) || !scheme.includes('.')) {
    fail('must use https:, http: on a loopback host, or a private-use scheme in reverse domain form such as com.example.app: (RFC 8252 §7.1)');
  }
  return uri;
}

/** The loopback URI without its port, for the comparison RFC 8252 §7.3 asks for. */
function withoutPort(url: URL): string {
  const copy = new URL(url.href);
  copy.port = '';
  return copy.href;
}

/** The registered URI `presented` matches, or null. */
export function matchRedirectUri(registered: readonly string[], presented: string): string | null {
  if (registered.includes(presented)) return presented;
  const url = parse(presented);
  if (url === null || !isLoopbackHttp(url)) return null;
  const bare = withoutPort(url);
  for (const r of registered) {
    const ru = parse(r);
    if (ru !== null && isLoopbackHttp(ru) && withoutPort(ru) === bare) return presented;
  }
  return null;
}
