import type { TokenWrites } from '../../store/store.js';
import type { EngineContext } from '../context.js';
import { UnauthorizedClientError } from '../errors.js';
import { accessTtl, mint, narrowScope, tokenResponse } from '../issue.js';
import { optional } from '../parameters.js';
import type { AccessTokenResponse } from '../results.js';
import { newJti } from '../tokens.js';
import type { Grant, ParsedGrant } from './grant.js';

/** The store ports this grant uses (store/ports/). */
type Ports = TokenWrites;

/**
 * RFC 6749 §4.4: `grant_type=client_credentials`, an access token for a confidential client
 * itself (a cron job calling an API): its `sub` and `username` are the client id, and there is
 * no refresh token (§4.4.3), so each token is a grant of its own.
 */
export const clientCredentialsGrant: Grant = {
  type: 'client_credentials',
  parse: (params) => clientCredentials(optional(params, 'scope')),
};

export function clientCredentials(scope: string | undefined): ParsedGrant<AccessTokenResponse> {
  return {
    type: clientCredentialsGrant.type,
    presented: null,
    async exchange(ctx: EngineContext<Ports>, client, _found, presentedAt, binding) {
      // §4.4: "MUST only be used by confidential clients"; a public client proved nothing.
      if (client.secretHash === null) throw new UnauthorizedClientError(clientCredentialsGrant.type);
      // A machine gets what it was registered for and nothing more: a client registered without a
      // scope gets tokens without one (not "any scope", as an operator's `token issue` may).
      const granted = narrowScope(scope, client.scope, false);
      const access = mint(ctx, { type: 'access_token', client, grantId: newJti(presentedAt), username: client.id, sub: client.id, scope: granted, ttlMs: accessTtl(ctx, client), jkt: binding.jkt }, presentedAt);
      await ctx.store.insertTokens([access.record]);
      const { refresh_token: _none, ...response } = tokenResponse(ctx, access, '', client);
      return { result: response, clientId: client.id, jti: response.jti, done: { kind: 'client_credentials' } };
    },
  };
}
