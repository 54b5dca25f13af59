import { optional, required } from '../parameters.js';
import { refresh } from '../refresh.js';
import type { TokenResponse } from '../results.js';
import type { Grant, ParsedGrant } from './grant.js';

/** RFC 6749 §6, spec 4.1: `grant_type=refresh_token`, a new access token for a refresh token (`refresh.ts`). */
export const refreshTokenGrant: Grant = {
  type: 'refresh_token',
  parse: (params) => refreshGrant(required(params, 'refresh_token'), optional(params, 'scope')),
};

/**
 * The refresh of `refreshToken`, to an optional narrower `scope`: what the endpoint's form asks
 * for, and what `tokenctl refresh --client-id` asks for without one.
 */
export function refreshGrant(refreshToken: string, scope: string | undefined): ParsedGrant<TokenResponse> {
  return {
    type: refreshTokenGrant.type,
    presented: refreshToken,
    async exchange(ctx, client, found, presentedAt, binding) {
      const response = await refresh(ctx, { client, refreshToken, scope, binding }, found, presentedAt);
      return { result: response, clientId: client.id, jti: response.jti, done: { kind: 'refreshed', rotated: response.refresh_token !== refreshToken } };
    },
  };
}
