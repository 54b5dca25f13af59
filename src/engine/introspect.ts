import { tokenState, type TokenRecord } from '../store/store.js';
import { findPresentedToken, toSeconds, tokenView, type EngineContext } from './context.js';
import type { Inspection, IntrospectionResult } from './results.js';

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

/** The operator's view: the verdict with its reason, which the HTTP answer hides. */
export async function inspect(ctx: EngineContext, by: { token: string } | { jti: string }): Promise<Inspection> {
  const record = 'jti' in by ? await ctx.store.findTokenByJti(by.jti) : await findPresentedToken(ctx, by.token);
  if (!record) return { verdict: 'unknown' };
  const now = ctx.clock.now();
  const state = tokenState(record, now);
  const verdict = state === 'active' && record.notBefore > now ? 'not_yet_valid' : state;
  return { verdict, token: tokenView(record, now), introspection: introspectionOf(ctx, record, now) };
}
