/**
 * `tokenctl/resource-server`: protect an API with tokenctl (docs/resource-server.md). Introspection
 * (RFC 7662) with client credentials, DPoP-bound tokens with their proofs (RFC 9449), a cache of the answers emptied by tokenctl's security events
 * (RFC 8417 SETs by RFC 8936 polling or RFC 8935 push), and adapters for Node's http, fastify and
 * express. Imports nothing else of tokenctl: it runs in the API's process.
 */
export { ResourceServer, IntrospectionUnavailable, type ResourceServerOptions, type ResourceServerStats } from './resource-server.js';
export { bearerToken, presentedToken, refusal, writeRefusal, type Check, type ChallengeOptions, type HeadersLike, type Principal, type PresentedToken, type Refusal, type RefusalKind } from './adapters.js';
export { accessTokenHash } from './dpop.js';
export { DPOP_ALGORITHMS } from './dpop-rules.js';
export type { DpopOptions } from './dpop-guard.js';
export { covers, type IntrospectionAnswer, type RevokedTokens } from './cache.js';
export { TOKENS_REVOKED } from './set-receiver.js';
export type { ResourceServerClock } from './clock.js';

import { ResourceServer, type ResourceServerOptions } from './resource-server.js';

/** `resourceServer(options)`: a {@link ResourceServer}, polling for events at once. */
export function resourceServer(options: ResourceServerOptions): ResourceServer {
  return new ResourceServer(options);
}
