import type { AuditStore, AuthorizationRecord, AuthorizationStore, ClientRecord, TokenWrites } from '../../store/store.js';
import { auditLine } from '../audit.js';
import { verifierMatches } from '../authorization/pkce.js';
import type { EngineContext } from '../context.js';
import { BOUND_CODE, checkBoundKey } from '../dpop/index.js';
import { CodeReplayedError, InvalidGrantError } from '../errors.js';
import { accessTtl, mint, refreshTtl, tokenResponse } from '../issue.js';
import { optional, required } from '../parameters.js';
import type { TokenResponse } from '../results.js';
import { newJti, sha256 } from '../tokens.js';
import type { Grant, ParsedGrant } from './grant.js';

/** The store ports this grant uses (store/ports/). */
type Ports = AuthorizationStore & TokenWrites & AuditStore;

/**
 * RFC 6749 §4.1.3, RFC 7636 §4.5: `grant_type=authorization_code`, the code of a login exchanged
 * for a new grant (spec 2.1, all nine fields). The code is redeemed and the grant stored in one
 * store step; a code presented again revokes that grant (§4.1.2).
 */
export const authorizationCodeGrant: Grant = {
  type: 'authorization_code',
  parse: (params) => codeGrant(required(params, 'code'), required(params, 'code_verifier'), optional(params, 'redirect_uri')),
};

const NOT_RECOGNISED = 'The authorization code is not recognised, or has expired (codes live 60 s and are used once): start the login again';

export function codeGrant(code: string, verifier: string, redirectUri: string | undefined): ParsedGrant<TokenResponse> {
  return {
    type: authorizationCodeGrant.type,
    presented: null,
    async exchange(ctx: EngineContext<Ports>, client, _found, presentedAt, binding) {
      const digest = sha256(code);
      const a = await ctx.store.findAuthorization({ codeDigest: digest });
      // RFC 6749 §4.1.3: issued to the authenticated client; another client's code reads as unknown.
      if (a === null || a.clientId !== client.id || a.grantId === null || a.codeExpiresAt === null) throw new InvalidGrantError(NOT_RECOGNISED);
      if (a.redeemedAt !== null) return replayed(ctx, client, a, presentedAt);
      if (presentedAt >= a.codeExpiresAt) throw new InvalidGrantError(NOT_RECOGNISED);
      // §4.1.3: "if the redirect_uri parameter was included in the authorization request …, their values MUST be identical".
      if (a.redirectUriSent ? redirectUri !== a.redirectUri : redirectUri !== undefined && redirectUri !== a.redirectUri) {
        throw new InvalidGrantError('redirect_uri does not match the one the code was issued for');
      }
      if (!verifierMatches(verifier, a.codeChallenge)) throw new InvalidGrantError('code_verifier does not match the code_challenge of the authorization request (RFC 7636 §4.6)');
      // RFC 9449 §10: a code whose request named dpop_jkt is redeemed only with a proof by that key.
      checkBoundKey(a.dpopJkt ?? null, binding, BOUND_CODE);
      // Each spec is written out, not spread from a shared one: the spread copies outlived two
      // scavenges under load and grew the old generation (bench/README.md, server RSS).
      const grantId = a.grantId;
      const username = a.username ?? a.subject ?? '';
      const sub = a.subject ?? '';
      const scope = a.grantedScope ?? '';
      const jkt = binding.jkt;
      const refresh = mint(ctx, { type: 'refresh_token', client, grantId, username, sub, scope, ttlMs: refreshTtl(ctx, client), jkt }, presentedAt);
      const access = mint(ctx, { type: 'access_token', client, grantId, username, sub, scope, ttlMs: accessTtl(ctx, client), jkt }, presentedAt);
      const line = auditLine(ctx, client.id, 'grant.authorize', `grant:${grantId} client:${client.id}`, 2, `user ${username}; scope ${scope || 'none'}`, presentedAt);
      const outcome = await ctx.store.redeemAuthorizationCode(digest, presentedAt, [refresh.record, access.record], { audit: line });
      if (outcome === 'used') return replayed(ctx, client, a, presentedAt);
      if (outcome === 'invalid') throw new InvalidGrantError(NOT_RECOGNISED);
      const response = tokenResponse(ctx, access, refresh.token, client);
      return { result: response, clientId: client.id, jti: response.jti, done: { kind: 'code_exchanged' } };
    },
  };
}

/** §4.1.2: a code used twice. End the grant it formed (with its audit line and security event), then refuse. */
async function replayed(ctx: EngineContext<Ports>, client: ClientRecord, a: AuthorizationRecord, now: number): Promise<never> {
  const grantId = a.grantId!;
  const line = auditLine(ctx, client.id, 'grant.code_replayed', `grant:${grantId} client:${client.id}`, 0, 'authorization code presented again; grant revoked', now);
  const event = { id: newJti(now), at: now, reason: 'reuse_detected' as const, scope: 'grant' as const, grantId, username: a.username ?? '', clientId: client.id };
  const revoked = await ctx.store.revokeGrant(grantId, now, { audit: line, event });
  // A store writes a change's trail only when it changed something, but a replayed code is an
  // attack sign worth a line even when its grant had ended already (revoked, or purged).
  if (revoked === 0) await ctx.store.appendAudit({ ...line, detail: 'authorization code presented again; its grant had ended already' });
  throw new CodeReplayedError(revoked);
}
