import { createHash, randomUUID } from 'node:crypto';
import type { BulkSelector, ClientRecord, TokenRecord, TokenStore } from '../../src/store/store.js';

/** A fixed "now" for store tests: stores take times as arguments and never read a clock. */
export const T0 = 1_700_000_000_000;
export const MINUTE = 60_000;
export const HOUR = 60 * MINUTE;

/** A confidential client created at T0; every field can be overridden. */
export function makeClient(overrides: Partial<ClientRecord> = {}): ClientRecord {
  return {
    id: `client-${randomUUID()}`,
    name: 'Test client',
    secretHash: 'scrypt$salt$hash',
    scope: 'read write',
    orgId: 'org-1',
    audience: 'https://api.example.test',
    accessTtlMs: null,
    refreshTtlMs: null,
    createdAt: T0,
    secretUpdatedAt: T0,
    redirectUris: [],
    grantTypes: ['refresh_token'],
    loginProvider: false,
    requireDpop: false,
    ...overrides,
  };
}

/**
 * An active access token issued at T0, valid for an hour, in a grant of its own. Pass `clientId`
 * of a client that exists in the store. The digest is derived from the jti unless overridden.
 */
export function makeToken(overrides: Partial<TokenRecord> = {}): TokenRecord {
  const jti = overrides.jti ?? randomUUID();
  const type = overrides.type ?? 'access_token';
  return {
    jti,
    digest: createHash('sha256').update(`token:${jti}`).digest('base64url'),
    type,
    grantId: randomUUID(),
    clientId: 'client-1',
    username: 'alice',
    sub: 'alice',
    scope: 'read',
    audience: 'https://api.example.test',
    orgId: 'org-1',
    node: 'node-1',
    issuedAt: T0,
    notBefore: T0,
    expiresAt: T0 + (type === 'refresh_token' ? 24 * HOUR : HOUR),
    revokedAt: null,
    replacedAt: null,
    replacedBy: null,
    jkt: null,
    ...overrides,
  };
}

/** A refresh token and an access token of one grant, as issuance creates them. */
export function makeGrant(overrides: Omit<Partial<TokenRecord>, 'jti' | 'digest' | 'type'> = {}): { refresh: TokenRecord; access: TokenRecord } {
  const grantId = overrides.grantId ?? randomUUID();
  return {
    refresh: makeToken({ ...overrides, grantId, type: 'refresh_token' }),
    access: makeToken({ ...overrides, grantId, type: 'access_token' }),
  };
}

/** A whole bulk revocation on a store: its batches until it says there is no more; the tokens revoked. */
export async function revokeAllBulk(store: TokenStore, selector: BulkSelector, at: number, limit = 5_000): Promise<number> {
  let revoked = 0;
  let resume: string | undefined;
  for (let more = true; more; ) {
    const batch = await store.revokeBulk(selector, at, limit, resume, {});
    revoked += batch.revoked;
    more = batch.more;
    resume = batch.resume;
  }
  return revoked;
}
