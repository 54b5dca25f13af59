import type { ClientRecord, TokenRecord } from '../store/store.js';
import { audit } from './audit.js';
import { findPresentedToken, type EngineContext } from './context.js';
import { InvalidTokenError, NotFoundError } from './errors.js';
import { accessTtl, mint, narrowScope, refreshTtl, tokenResponse, type Minted } from './issue.js';
import type { TokenResponse } from './results.js';

export interface RefreshInput {
  /** The authenticated client (spec part 5). */
  client: ClientRecord;
  refreshToken: string;
  /** RFC 6749 §6: optional narrower scope for the new access token. */
  scope?: string;
}

/**
 * Spec 4.1 / part 3: exchanges a valid refresh token for a new access token.
 *
 * - Unknown, not a refresh token, or another client's: `invalid_token`, "not recognised".
 * - Revoked: `invalid_token`, "revoked".
 * - Expired: `invalid_token` with spec 7.1's description (the token is echoed, as 7.1 says).
 * - Without rotation the refresh token stays as issued and is returned again (spec part 3).
 * - With rotation a new refresh token replaces it; a replaced token presented again is reuse
 *   and revokes the whole grant (RFC 9700 §4.14.2), except for the immediately previous token
 *   within the grace period, when its replacement has not been used yet.
 */
export async function refresh(ctx: EngineContext, input: RefreshInput, found?: TokenRecord | null): Promise<TokenResponse> {
  const { client, refreshToken } = input;
  // `found`: the presented token's record, read already (with the client, in one store read).
  const token = found !== undefined ? found : await findPresentedToken(ctx, refreshToken);
  const now = ctx.clock.now();
  if (!token || token.type !== 'refresh_token' || token.clientId !== client.id) {
    throw new InvalidTokenError('unknown', refreshToken);
  }
  if (token.revokedAt !== null) throw new InvalidTokenError('revoked', refreshToken);
  if (token.expiresAt <= now) throw new InvalidTokenError('expired', refreshToken);
  if (token.notBefore > now) throw new InvalidTokenError('unknown', refreshToken);
  const scope = narrowScope(input.scope, token.scope, false);
  const access = mintAccess(ctx, client, token, scope, now);

  if (!ctx.config.rotateRefreshTokens && token.replacedAt === null) {
    // The refresh token was read before: the store inserts only if it is still current (a
    // revocation of the grant committed in between would otherwise miss the new token).
    const outcome = await ctx.store.insertMintedAccess(access.record, token.jti);
    if (outcome !== 'inserted') throw new InvalidTokenError(outcome, refreshToken);
    return tokenResponse(ctx, access, refreshToken, client);
  }

  let revokeJti: string | undefined;
  if (token.replacedAt !== null) {
    revokeJti = await graceReplacement(ctx, token, now);
    if (revokeJti === undefined) {
      // Reuse of a replaced refresh token: somebody holds a copy. End the whole grant.
      const revoked = await ctx.store.revokeGrant(token.grantId, now);
      await audit(ctx, client.id, 'token.reuse_detected', `grant:${token.grantId} client:${client.id}`, revoked, `replaced refresh_token ${token.jti} presented again; grant revoked`);
      throw new InvalidTokenError('revoked', refreshToken);
    }
  }
  const next = mint(
    ctx,
    { type: 'refresh_token', client, grantId: token.grantId, username: token.username, sub: token.sub, scope: token.scope, ttlMs: refreshTtl(ctx, client) },
    now,
  );
  // The grant's lifetime does not grow by rotating: the new refresh token ends when the old one would.
  next.record.expiresAt = Math.min(next.record.expiresAt, token.expiresAt);
  const outcome = await ctx.store.rotateRefreshToken(token.jti, [next.record, access.record], now, revokeJti);
  // Lost the race to a concurrent refresh of the same token: not reuse, just too late.
  if (outcome === 'conflict') throw new InvalidTokenError('revoked', refreshToken);
  return tokenResponse(ctx, access, next.token, client);
}

/**
 * A refresh by an operator who holds the store (CLI without client credentials): acts as the
 * token's own client. An unknown token is NotFoundError, not a silent invalid_token.
 */
export async function refreshAsOperator(ctx: EngineContext, refreshToken: string, scope?: string): Promise<TokenResponse> {
  const token = await findPresentedToken(ctx, refreshToken);
  const client = token ? await ctx.store.getClient(token.clientId) : null;
  if (!token || !client) {
    throw new NotFoundError(`no such token in ${ctx.store.location} (it may have been purged, or belong to another store)`);
  }
  return refresh(ctx, { client, refreshToken, scope });
}

function mintAccess(ctx: EngineContext, client: ClientRecord, token: TokenRecord, scope: string, now: number): Minted {
  return mint(
    ctx,
    { type: 'access_token', client, grantId: token.grantId, username: token.username, sub: token.sub, scope, ttlMs: accessTtl(ctx, client) },
    now,
  );
}

/**
 * The grace period: a replaced token may be used again within `refreshGraceMs` of its
 * replacement, if its replacement is still current (never a token two generations old).
 * Returns the replacement's jti to revoke, or undefined when the grace does not apply.
 */
async function graceReplacement(ctx: EngineContext, token: TokenRecord, now: number): Promise<string | undefined> {
  const grace = ctx.config.refreshGraceMs;
  if (grace <= 0 || token.replacedAt === null || token.replacedBy === null) return undefined;
  if (now - token.replacedAt > grace) return undefined;
  const replacement = await ctx.store.findTokenByJti(token.replacedBy);
  if (!replacement || replacement.revokedAt !== null || replacement.replacedAt !== null) return undefined;
  return replacement.jti;
}
