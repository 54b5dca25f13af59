import type { PresentedCredentials } from './client-auth.js';
import type { ParsedGrant } from './grants/index.js';

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
}

/** Spec 4.2, 4.3: the token to revoke or introspect. */
export interface ClientRequest extends ClientCall {
  token: string;
}

/** POST /oauth/token: the grant asked for, its parameters read (`Engine.tokenRequest`). */
export interface TokenRequest extends ClientCall {
  grant: ParsedGrant;
}

/** Spec 4.1 from the command line: the refresh token, and an optional narrower scope (RFC 6749 §6). */
export interface RefreshRequest extends ClientRequest {
  scope?: string;
}

/** Errors thrown after the client was authenticated, and by whom: for the request log. */
const failedBy = new WeakMap<object, string>();

/**
 * Remembers `err`, thrown after the client `clientId` was authenticated, as that client's (see
 * {@link clientOfFailure}) and returns it, to be thrown on unchanged: errors keep their one vocabulary.
 */
export function failedFor(err: unknown, clientId: string): unknown {
  if (typeof err === 'object' && err !== null) failedBy.set(err, clientId);
  return err;
}

/**
 * The client a client request's error was thrown for, when it failed after authentication (an
 * expired refresh token, a store fault while revoking): the request log names it. Null when the
 * request failed before (bad credentials) or is not a client request's.
 */
export function clientOfFailure(err: unknown): string | null {
  return typeof err === 'object' && err !== null ? (failedBy.get(err) ?? null) : null;
}
