import { tokenEvent } from './revocation-events.js';
import type { ClientRecord, ClientStore, TokenReads, TokenRecord, TokenWrites } from '../store/store.js';
import { auditLine } from './audit.js';
import { findPresentedToken, type EngineContext, type Located } from './context.js';
import { InvalidTokenError, NotFoundError, RefreshLimitError, ReuseDetectedError } from './errors.js';
import { accessTtl, mint, narrowScope, refreshTtl, tokenResponse, type Minted } from './issue.js';
import type { TokenResponse } from './results.js';
import { BEARER, BOUND_REFRESH, checkBoundKey, type TokenBinding } from './dpop/index.js';

/** The store ports this module uses (store/ports/). */
type Ports = ClientStore & TokenReads & TokenWrites & Located;

/** The window of EngineConfig.maxRefreshesPerMinute. */
const MINUTE_MS = 60_000;

export interface RefreshInput {
  /** The authenticated client (spec part 5). */
  client: ClientRecord;
  refreshToken: string;
  /** RFC 6749 §6: optional narrower scope for the new access token. */
  scope?: string;
  /** The key of the request's DPoP proof (RFC 9449 §5); none: {@link BEARER}. */
  binding?: TokenBinding;
}

/**
 * Spec 4.1 / part 3: exchanges a valid refresh token for a new access token.
 *
 * - Unknown, not a refresh token, or another client's: `invalid_token`, "not recognised".
 * - Revoked: `invalid_token`, "revoked".
 * - Expired: `invalid_token` with spec 7.1's description (the token is echoed, as 7.1 says).
 * - Without rotation the refresh token stays as issued and is returned again (spec part 3).
 * - With rotation a new refresh token replaces it. A replaced token presented again is, in turn:
 *   a lost race, when the presentation arrived at most the rotation race window after the
 *   replacement was made (the window allows for clock skew between nodes and for a request that
 *   waited in a busy server): refused, nothing revoked;
 *   the grace period (the immediately previous token, whose replacement is unused); or reuse,
 *   which revokes the whole grant (RFC 9700 §4.14.2).
 *
 * - Bound to a DPoP key (RFC 9449 §5): refused with `invalid_dpop_proof` unless the request's
 *   proof is by that key, before anything else is told of the token. The new access token is
 *   bound to the proof's key; a rotated refresh token keeps its predecessor's binding, or takes
 *   the proof's when that had none.
 *
 * `presentedAt`: when the request arrived (before its token was read); now, when not given.
 */
export async function refresh(ctx: EngineContext<Ports>, input: RefreshInput, found?: TokenRecord | null, presentedAt?: number): Promise<TokenResponse> {
  const { client, refreshToken } = input;
  const binding = input.binding ?? BEARER;
  const presented = presentedAt ?? ctx.clock.now();
  // `found`: the presented token's record, read already (with the client, in one store read).
  const token = found !== undefined ? found : await findPresentedToken(ctx, refreshToken);
  const now = ctx.clock.now();
  if (!token || token.type !== 'refresh_token' || token.clientId !== client.id) {
    throw new InvalidTokenError('unknown', refreshToken);
  }
  checkBoundKey(token.jkt ?? null, binding, BOUND_REFRESH);
  // Superseded by a grace-period re-use: revoked and replaced in one step (the same instant). Any
  // other revoked token is just revoked, replaced before or not.
  const superseded = token.replacedAt !== null && token.revokedAt === token.replacedAt;
  if (token.revokedAt !== null && !superseded) throw new InvalidTokenError('revoked', refreshToken);
  // A superseded token is revoked too (its revocation and replacement share an instant, which an
  // operator's revocation in the same millisecond as a rotation also does): past its expiry, say so.
  if (token.expiresAt <= now) throw new InvalidTokenError(superseded ? 'revoked' : 'expired', refreshToken);
  if (token.notBefore > now) throw new InvalidTokenError('unknown', refreshToken);
  const scope = narrowScope(input.scope, token.scope, false);
  const revokeJti = token.replacedAt === null ? undefined : await replacedPresented(ctx, client, token, superseded, refreshToken, presented, now);
  const access = mintAccess(ctx, client, token, scope, binding, now);

  if (!ctx.config.rotateRefreshTokens && revokeJti === undefined) {
    // The refresh token was read before: the store inserts only if it is still current (a
    // revocation of the grant committed in between would otherwise miss the new token).
    const max = ctx.config.maxRefreshesPerMinute;
    const outcome = await ctx.store.insertMintedAccess(access.record, token.jti, max > 0 ? { since: now - MINUTE_MS, max } : undefined);
    if (outcome === 'limited') throw new RefreshLimitError(max, MINUTE_MS / 1000);
    if (outcome !== 'inserted') throw new InvalidTokenError(outcome, refreshToken);
    return tokenResponse(ctx, access, refreshToken, client);
  }

  const next = mint(
    ctx,
    { type: 'refresh_token', client, grantId: token.grantId, username: token.username, sub: token.sub, scope: token.scope, ttlMs: refreshTtl(ctx, client), jkt: token.jkt ?? binding.jkt },
    now,
  );
  // The grant's lifetime does not grow by rotating: the new refresh token ends when the old one would.
  next.record.expiresAt = Math.min(next.record.expiresAt, token.expiresAt);
  // The instant of the replacement is taken as late as possible, just before it is written, so
  // that it is close to its commit: presentations that arrive before it are a lost race.
  const outcome = await ctx.store.rotateRefreshToken(token.jti, [next.record, access.record], Math.max(now, ctx.clock.now()), revokeJti);
  if (outcome === 'conflict') {
    // Lost the race to a concurrent refresh of the same token (not reuse, just too late), or to
    // a revocation of its grant: read again, so that the answer says which.
    const current = await ctx.store.findTokenByJti(token.jti);
    throw new InvalidTokenError(current === null || current.revokedAt !== null ? 'revoked' : 'replaced', refreshToken);
  }
  return tokenResponse(ctx, access, next.token, client);
}

/**
 * A replaced refresh token was presented: returns the jti of its replacement to supersede when
 * the grace period applies; throws `invalid_token` for a lost race (nothing revoked) and for
 * reuse (after revoking the whole grant).
 */
async function replacedPresented(
  ctx: EngineContext<Ports>,
  client: ClientRecord,
  token: TokenRecord,
  superseded: boolean,
  refreshToken: string,
  presented: number,
  now: number,
): Promise<string> {
  // Arrived before (or at) the replacement, allowing for clock skew: a concurrent refresh won.
  // Never for a token superseded by a grace-period re-use: the other branch of the grant is
  // presenting it, and that is reuse whenever it happens.
  if (!superseded && presented <= token.replacedAt! + ctx.config.rotationRaceWindowMs) {
    throw new InvalidTokenError('replaced', refreshToken);
  }
  const grace = superseded ? undefined : await graceReplacement(ctx, token, now);
  if (grace !== undefined) return grace;
  // Reuse of a replaced refresh token: somebody holds a copy. End the whole grant; its audit line
  // goes in the same transaction.
  const line = auditLine(ctx, client.id, 'token.reuse_detected', `grant:${token.grantId} client:${client.id}`, 0, `replaced refresh_token ${token.jti} presented again; grant revoked`, now);
  const revoked = await ctx.store.revokeGrant(token.grantId, now, { audit: line, event: tokenEvent(token, now, 'reuse_detected', true) });
  throw new ReuseDetectedError(revoked, refreshToken);
}

/**
 * A refresh by an operator who holds the store (CLI without client credentials): acts as the
 * token's own client. An unknown token is NotFoundError, not a silent invalid_token.
 */
export async function refreshAsOperator(ctx: EngineContext<Ports>, refreshToken: string, scope?: string): Promise<TokenResponse> {
  const token = await findPresentedToken(ctx, refreshToken);
  const client = token ? await ctx.store.getClient(token.clientId) : null;
  if (!token || !client) {
    throw new NotFoundError(`no such token in ${ctx.store.location} (it may have been purged, or belong to another store)`);
  }
  return refresh(ctx, { client, refreshToken, scope });
}

function mintAccess(ctx: EngineContext<Ports>, client: ClientRecord, token: TokenRecord, scope: string, binding: TokenBinding, now: number): Minted {
  return mint(
    ctx,
    { type: 'access_token', client, grantId: token.grantId, username: token.username, sub: token.sub, scope, ttlMs: accessTtl(ctx, client), jkt: binding.jkt },
    now,
  );
}

/**
 * The grace period: a replaced token may be used again within `refreshGraceMs` of its
 * replacement, if its replacement is still current (never a token two generations old).
 * Returns the replacement's jti to revoke, or undefined when the grace does not apply.
 */
async function graceReplacement(ctx: EngineContext<Ports>, token: TokenRecord, now: number): Promise<string | undefined> {
  const grace = ctx.config.refreshGraceMs;
  if (grace <= 0 || token.replacedAt === null || token.replacedBy === null) return undefined;
  if (now - token.replacedAt > grace) return undefined;
  const replacement = await ctx.store.findTokenByJti(token.replacedBy);
  if (!replacement || replacement.revokedAt !== null || replacement.replacedAt !== null) return undefined;
  return replacement.jti;
}
