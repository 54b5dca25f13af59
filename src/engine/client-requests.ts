import type { PresentedCredentials } from './client-auth.js';
import type { DpopPresentation } from './dpop/index.js';
import type { ParsedGrant } from './grants/index.js';
import type { TokenEndpointResponse } from './results.js';

/**
 * What a client presents at one of the three endpoints (spec part 4): its credentials (spec part
 * 5) and where it came from. Each endpoint is one engine call taking it (`Engine.tokenAsClient`,
 * `revokeAsClient`, `introspectAsClient`), which authenticates the client and reads the token
 * presented in one store read, then does the endpoint's work.
 */
export interface ClientCall {
  credentials: PresentedCredentials;
  /** The caller's network address, for the brute-force budgets; none from the CLI. */
  source?: string;
  /** Told the client as soon as it is authenticated; none from the CLI. */
  log?: RequestLog;
}

/**
 * Where the engine notes the client of a request once it has authenticated it: a request refused
 * after that (an expired refresh token, a store fault) is still told as that client's in the
 * request log, while one refused before names no client (whoever it claimed to be).
 */
export interface RequestLog {
  clientId: string | null;
}

/** Spec 4.2, 4.3: the token to revoke or introspect. */
export interface ClientRequest extends ClientCall {
  token: string;
}

/** POST /oauth/token: the grant asked for, its parameters read (`Engine.tokenRequest`). */
export interface TokenRequest<R extends TokenEndpointResponse = TokenEndpointResponse> extends ClientCall {
  grant: ParsedGrant<R>;
  /** The request's `DPoP` header and what its proof must name (RFC 9449 §4.3); none from the CLI. */
  dpop?: DpopPresentation;
}

/** Spec 4.1 from the command line: the refresh token, and an optional narrower scope (RFC 6749 §6). */
export interface RefreshRequest extends ClientRequest {
  scope?: string;
}
