import { createHmac } from 'node:crypto';
import { sameInConstantTime } from '../engine/secrets.js';
import { parse, serialize } from 'cookie';
import type { IncomingHttpHeaders } from 'node:http';

/**
 * The cookie that binds an authorization request to the browser that started it (contract 5):
 * HttpOnly, SameSite=Lax (sent on the top-level navigation back from the login app), and on
 * HTTPS `Secure` with the `__Host-` prefix (RFC 6265bis §4.1.3.2), so no other host can set it.
 */
const SECURE_NAME = '__Host-tokenctl-login';
const PLAIN_NAME = 'tokenctl-login';
/** As long as a login challenge lives. */
const MAX_AGE_S = 600;

/** The browser's cookie value, or null. */
export function browserCookie(headers: IncomingHttpHeaders): string | null {
  const header = headers.cookie;
  if (header === undefined) return null;
  const jar = parse(header);
  return jar[SECURE_NAME] ?? jar[PLAIN_NAME] ?? null;
}

/** The Set-Cookie header for `value`; `secure` when the server's issuer is HTTPS. */
export function setBrowserCookie(value: string, secure: boolean): string {
  return serialize(secure ? SECURE_NAME : PLAIN_NAME, value, { httpOnly: true, sameSite: 'lax', secure, path: '/', maxAge: MAX_AGE_S });
}

/**
 * The development page's CSRF token: an HMAC of the challenge keyed by the browser's cookie, which
 * another site can neither read nor set, and which every node computes alike (no server key).
 */
export function csrfToken(browser: string, challenge: string): string {
  return createHmac('sha256', browser).update(`dev-login:${challenge}`).digest('base64url');
}

export function csrfMatches(browser: string | null, challenge: string, presented: string | undefined): boolean {
  if (browser === null || presented === undefined) return false;
  return sameInConstantTime(csrfToken(browser, challenge), presented);
}
