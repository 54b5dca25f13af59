import * as crypto from 'node:crypto';
import { createHash, randomFillSync } from 'node:crypto';
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
  const at = takeRandom(TOKEN_BYTES);
  return TOKEN_PREFIX[type] + POOL.toString('base64url', at, at + TOKEN_BYTES);
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

/**
 * Random bytes drawn from the CSPRNG in blocks, as randomUUID does: one call into OpenSSL per
 * 8 KiB (256 tokens or 512 ids) instead of one per token, which cost a refresh as much as its
 * digests. Every byte is handed out once.
 */
const POOL = Buffer.alloc(8192);
let poolOffset = POOL.length;

/** Where the next `n` unused random bytes of the pool start. */
function takeRandom(n: number): number {
  if (poolOffset + n > POOL.length) {
    randomFillSync(POOL);
    poolOffset = 0;
  }
  const at = poolOffset;
  poolOffset += n;
  return at;
}

/**
 * A new token or grant id: a UUID version 7 (RFC 9562 §5.7): 48 bits of Unix milliseconds, then
 * 74 random bits. Time-ordered (contract 2), so that new tokens append to the
 * jti index instead of dirtying a random page of it on every insert; still unguessable and unique.
 */
export function newJti(now: number = Date.now()): string {
  const at = takeRandom(16);
  const b = POOL.subarray(at, at + 16);
  b.writeUIntBE(now, 0, 6);
  b[6] = (b[6]! & 0x0f) | 0x70; // version 7
  b[8] = (b[8]! & 0x3f) | 0x80; // variant 10
  const hex = b.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The digest to look a presented string up by, or null for a string that is no token of ours. */
export function presentedDigest(token: string): string | null {
  return isWellFormedToken(token) ? digestToken(token) : null;
}
