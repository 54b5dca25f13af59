import type { BulkSelector, RevocationEvent, RevocationReason, TokenRecord } from '../store/store.js';
import { newJti } from './tokens.js';

/**
 * The security event of a revocation (docs/events.md), handed to the store with the revocation itself
 * so that both commit together. Stores write it only when the revocation changed something and a
 * receiver is registered; signing and delivery are `src/events/`'s.
 */

/** One token revoked: an access token alone, or a refresh token and its grant with it. */
export function tokenEvent(token: TokenRecord, at: number, reason: RevocationReason = 'revoked', wholeGrant = token.type === 'refresh_token'): RevocationEvent {
  return {
    id: newJti(at),
    at,
    reason,
    scope: wholeGrant ? 'grant' : 'token',
    jti: token.jti,
    tokenType: token.type,
    grantId: token.grantId,
    username: token.username,
    clientId: token.clientId,
  };
}

/** A bulk revocation: one event for all of it. `named` is the token a `jti` selector names. */
export function bulkEvent(selector: BulkSelector, at: number, named: TokenRecord | null): RevocationEvent {
  if ('jti' in selector) {
    if (!named) throw new Error(`bulkEvent: the token ${selector.jti} must be read first`);
    return tokenEvent(named, at);
  }
  if ('username' in selector) {
    return { id: newJti(at), at, reason: 'revoked', scope: 'user', username: selector.username, ...(selector.clientId !== undefined ? { clientId: selector.clientId } : {}) };
  }
  return { id: newJti(at), at, reason: 'revoked', scope: 'client', clientId: selector.clientId };
}

/** A client deleted, and every token issued to it. */
export function clientDeletedEvent(clientId: string, at: number): RevocationEvent {
  return { id: newJti(at), at, reason: 'client_deleted', scope: 'client', clientId };
}
