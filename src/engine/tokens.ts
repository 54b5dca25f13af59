import * as crypto from 'node:crypto';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { TokenType } from '../store/store.js';

/**
 * Token strings (contract 2): 256 bits from the OS CSPRNG, base64url, behind a short prefix that
 * names the type, so that a leaked token is recognisable (secret scanners, log reviews).
 * Stores only ever see {@link digestToken}'s output.
 */
export const TOKEN_PREFIX: Readonly<Record<TokenType, string>> = {
  access_token: 'tca_',
  refresh_token: 'tcr_',
};

const TOKEN_BYTES = 32;
/** Prefix plus 43 base64url characters. */
const TOKEN_PATTERN = /^tc[ar]_[A-Za-z0-9_-]{43}$/;

export function generateToken(type: TokenType): string {
  return TOKEN_PREFIX[type] + randomBytes(TOKEN_BYTES).toString('base64url');
}

/** SHA-256 of the token string, base64url. A token's only stored form. */
export function digestToken(token: string): string {
  return sha256(token);
}

type OneShotHash = (algorithm: string, data: string, encoding: 'base64url') => string;
/** Node ≥ 20.12's one-shot `crypto.hash`: a third of the cost of createHash for short strings. */
const oneShot = (crypto as unknown as { hash?: OneShotHash }).hash;

/** SHA-256 of a UTF-8 string, base64url. */
export const sha256: (text: string) => string = oneShot
  ? (text) => oneShot('sha256', text, 'base64url')
  : (text) => createHash('sha256').update(text, 'utf8').digest('base64url');

/** True when the string has the shape of a token tokenctl issues. */
export function isWellFormedToken(token: string): boolean {
  return TOKEN_PATTERN.test(token);
}

/** The type a token's prefix names, or null for a string that is not a tokenctl token. */
export function tokenTypeOf(token: string): TokenType | null {
  if (!isWellFormedToken(token)) return null;
  return token.startsWith(TOKEN_PREFIX.access_token) ? 'access_token' : 'refresh_token';
}

export function newJti(): string {
  return randomUUID();
}

/** The digest to look a presented string up by, or null for a string that is no token of ours. */
export function presentedDigest(token: string): string | null {
  return isWellFormedToken(token) ? digestToken(token) : null;
}
