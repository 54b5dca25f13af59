import { tokenState, type ClientRecord, type TokenRecord } from '../store/store.js';
import { findPresentedToken, toSeconds, tokenView, type EngineContext } from './context.js';
import type { ClientOutcome, Inspection, IntrospectionResult } from './results.js';
import type { TokenReads } from '../store/store.js';

/** The store ports this module uses (store/ports/). */
type Ports = TokenReads;

/*
 * Introspection, all of it: what a client is told of a token (spec 4.3, RFC 7662; the HTTP
 * endpoint is `http/endpoints/introspection.ts`), and what an operator is told (`tokenctl
 * introspect`, `commands/introspect.ts`).
 */

const INACTIVE: IntrospectionResult = Object.freeze({ active: false });

/**
 * Spec 4.3 for the authenticated `client`, `token` being the presented token's record, read with
 * the client (null: none). A confidential client may introspect any token (a resource server
 * checks tokens issued to others); a public client, which proves nothing but its id, only its
 * own: any other token is inactive to it (contract 3).
 */
export function introspectForClient(ctx: EngineContext<Ports>, client: ClientRecord, token: TokenRecord | null): ClientOutcome<IntrospectionResult> {
  const visible = client.secretHash !== null || token?.clientId === client.id;
  const result = introspectionOf(ctx, visible ? token : null, ctx.clock.now());
  return { result, clientId: client.id, jti: result.active ? result.jti : null, done: { kind: 'introspected', active: result.active } };
}

/** Spec 2.3 for a stored token at `now`; contract 3: inactive reveals nothing but `active`. */
export function introspectionOf(ctx: EngineContext<Ports>, token: TokenRecord | null, now: number): IntrospectionResult {
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
    ...(token.jkt != null && { cnf: { jkt: token.jkt } }),
  };
}

/** The operator's view: the verdict with its reason, which the HTTP answer hides. */
export async function inspect(ctx: EngineContext<Ports>, by: { token: string } | { jti: string }): Promise<Inspection> {
  const record = 'jti' in by ? await ctx.store.findTokenByJti(by.jti) : await findPresentedToken(ctx, by.token);
  if (!record) return { verdict: 'unknown' };
  const now = ctx.clock.now();
  const state = tokenState(record, now);
  const verdict = state === 'active' && record.notBefore > now ? 'not_yet_valid' : state;
  return { verdict, token: tokenView(record, now), introspection: introspectionOf(ctx, record, now) };
}
