import type { ClientRecord, TokenRecord, TokenStore } from '../store/store.js';
import type { Clock } from './clock.js';
import type { ClientView, TokenView } from './results.js';
import { tokenState } from '../store/store.js';
import { presentedDigest } from './tokens.js';

/** Settings of one engine (one server or one CLI invocation). */
export interface EngineConfig {
  /** Issuer URL, returned as `iss` (spec 2.3). */
  issuer: string;
  /** This node's name, returned as `node` (spec 2.1). */
  node: string;
  /** Default access token lifetime, ms (contract 2: 1 h). */
  accessTtlMs: number;
  /** Default refresh token lifetime, ms (contract 2: 30 d). */
  refreshTtlMs: number;
  /** Contract 3 `--rotate-refresh-tokens`. */
  rotateRefreshTokens: boolean;
  /** Contract/issue `--refresh-grace`: 0 to 60 s. */
  refreshGraceMs: number;
  /**
   * Rotation: a replaced refresh token presented at most this long (ms) after its replacement was
   * made is a lost race (refused, nothing revoked), not reuse. It allows for the clock skew between
   * nodes and for a request that waited in a busy server (contract 3, issue "A revocation is final").
   */
  rotationRaceWindowMs: number;
  /**
   * At most this many tokens minted from one grant in any minute by refreshes without rotation
   * (0: no limit), so that one leaked refresh token cannot mint access tokens without bound
   * (issue 19). With rotation every refresh token mints once, and its successor must be stolen too.
   */
  maxRefreshesPerMinute: number;
}

/** Default {@link EngineConfig.maxRefreshesPerMinute}: two a second, far above any client's need. */
export const MAX_REFRESHES_PER_MINUTE = 120;

/** Default {@link EngineConfig.rotationRaceWindowMs}: 2 s. */
export const ROTATION_RACE_WINDOW_MS = 2_000;

/** What every engine operation works with. */
export interface EngineContext {
  store: TokenStore;
  clock: Clock;
  config: EngineConfig;
}

export const HOUR_MS = 3_600_000;
export const DAY_MS = 24 * HOUR_MS;
export const MAX_REFRESH_GRACE_MS = 60_000;

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
  };
}

/** The record of a token a client or an operator presented (null: unknown, or not a token of ours). */
export async function findPresentedToken(ctx: EngineContext, token: string): Promise<TokenRecord | null> {
  const digest = presentedDigest(token);
  return digest === null ? null : ctx.store.findTokenByDigest(digest);
}
