import type { ClientRecord, TokenReads, TokenRecord, TokenStore } from '../store/store.js';
import type { Clock } from './clock.js';
import type { ClientView, TokenView } from './results.js';
import { tokenState } from '../store/store.js';
import { ENGINE_SETTINGS, type EngineConfig } from './settings.js';
import { presentedDigest } from './tokens.js';

export type { EngineConfig } from './settings.js';

/** Default {@link EngineConfig.maxRefreshesPerMinute}. */
export const MAX_REFRESHES_PER_MINUTE = ENGINE_SETTINGS.maxRefreshesPerMinute.default;

/** Default {@link EngineConfig.rotationRaceWindowMs}. */
export const ROTATION_RACE_WINDOW_MS = ENGINE_SETTINGS.rotationRaceWindowMs.default;

/**
 * What every engine operation works with. `Ports` is the part of the store contract the
 * operation uses (store/ports/): each engine module names its own, so that what a use case may
 * touch is read off its signature; the engine holds the whole store and passes it to each.
 */
export interface EngineContext<Ports = TokenStore> {
  store: Ports;
  clock: Clock;
  config: EngineConfig;
}

/** The store's location, for messages that name it. */
export type Located = Pick<TokenStore, 'location'>;

export function toSeconds(ms: number): number {
  return Math.floor(ms / 1000);
}

export function splitScope(scope: string): string[] {
  return scope.split(' ').filter((s) => s !== '');
}

export function clientView(client: ClientRecord): ClientView {
  return {
    client_id: client.id,
    name: client.name,
    type: client.secretHash === null ? 'public' : 'confidential',
    scope: client.scope,
    org_id: client.orgId,
    audience: client.audience,
    access_ttl_s: client.accessTtlMs === null ? null : toSeconds(client.accessTtlMs),
    refresh_ttl_s: client.refreshTtlMs === null ? null : toSeconds(client.refreshTtlMs),
    created_at: client.createdAt,
    secret_updated_at: client.secretUpdatedAt,
    redirect_uris: [...client.redirectUris],
    grant_types: [...client.grantTypes],
    login_provider: client.loginProvider,
    require_dpop: client.requireDpop,
  };
}

export function tokenView(token: TokenRecord, now: number): TokenView {
  return {
    jti: token.jti,
    type: token.type,
    state: tokenState(token, now),
    client_id: token.clientId,
    username: token.username,
    sub: token.sub,
    scope: token.scope,
    aud: token.audience,
    node: token.node,
    grant_id: token.grantId,
    issued_at: token.issuedAt,
    not_before: token.notBefore,
    expires_at: token.expiresAt,
    revoked_at: token.revokedAt,
    replaced_at: token.replacedAt,
    jkt: token.jkt ?? null,
  };
}

/** The record of a token a client or an operator presented (null: unknown, or not a token of ours). */
export async function findPresentedToken(ctx: EngineContext<TokenReads>, token: string): Promise<TokenRecord | null> {
  const digest = presentedDigest(token);
  return digest === null ? null : ctx.store.findTokenByDigest(digest);
}
