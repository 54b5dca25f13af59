import { tokenState, type TokenRecord } from '../store/store.js';
import { toSeconds, tokenView, type EngineContext } from './context.js';
import type { Inspection, IntrospectionResult } from './results.js';
import { digestToken, isWellFormedToken } from './tokens.js';

const INACTIVE: IntrospectionResult = Object.freeze({ active: false });

/** Spec 2.3 for a stored token at `now`; contract 3: inactive reveals nothing but `active`. */
export function introspectionOf(ctx: EngineContext, token: TokenRecord | null, now: number): IntrospectionResult {
  if (!token || tokenState(token, now) !== 'active' || token.notBefore > now) return INACTIVE;
  return {
    active: true,
    scope: token.scope,
    client_id: token.clientId,
    username: token.username,
    token_type: token.type,
    exp: toSeconds(token.expiresAt),
    iat: toSeconds(token.issuedAt),
    nbf: toSeconds(token.notBefore),
    sub: token.sub,
    aud: token.audience,
    iss: ctx.config.issuer,
    jti: token.jti,
  };
}

/**
 * Spec 4.3: any authenticated client may introspect any token (contract 3). The hint is only a
 * hint (RFC 7009 §2.1, RFC 7662 §2.1): the token is found whatever its type.
 */
export async function introspect(ctx: EngineContext, token: string): Promise<IntrospectionResult> {
  const record = isWellFormedToken(token) ? await ctx.store.findTokenByDigest(digestToken(token)) : null;
  return introspectionOf(ctx, record, ctx.clock.now());
}

/** The digest to look a presented token up by, or null for a string that is no token of ours. */
export function lookupDigest(token: string): string | null {
  return isWellFormedToken(token) ? digestToken(token) : null;
}

/** The operator's view: the verdict with its reason, which the HTTP answer hides. */
export async function inspect(ctx: EngineContext, by: { token: string } | { jti: string }): Promise<Inspection> {
  const record =
    'jti' in by
      ? await ctx.store.findTokenByJti(by.jti)
      : isWellFormedToken(by.token)
        ? await ctx.store.findTokenByDigest(digestToken(by.token))
        : null;
  if (!record) return { verdict: 'unknown' };
  const now = ctx.clock.now();
  const state = tokenState(record, now);
  const verdict = state === 'active' && record.notBefore > now ? 'not_yet_valid' : state;
  return { verdict, token: tokenView(record, now), introspection: introspectionOf(ctx, record, now) };
}
