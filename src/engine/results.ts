import type { TokenState, TokenType } from '../store/store.js';

/** Spec 2.1: the token response of a refresh (and of `token issue`), all nine fields. */
export interface TokenResponse {
  access_token: string;
  /** Lifetime of the access token in seconds. */
  expires_in: number;
  /** The new access token's jti (UUID). */
  jti: string;
  node: string;
  org_id: string;
  refresh_token: string;
  scope: string;
  /** Issue time, milliseconds since the epoch (contract 2). */
  stime: number;
  /** The spec's `bearer`; `DPoP` for tokens bound to the key of the request's proof (contract 8, RFC 9449 §5). */
  token_type: 'bearer' | 'DPoP';
}

/** RFC 6749 §4.4.3: the client credentials grant's answer, spec 2.1 without a refresh token. */
export type AccessTokenResponse = Omit<TokenResponse, 'refresh_token'>;

/** What POST /oauth/token answers, whichever grant. */
export type TokenEndpointResponse = TokenResponse | AccessTokenResponse;

/** Spec 2.2, with contract 3's third code. */
export type RevocationCode = 'token_revoke_success' | 'token_already_revoked' | 'token_invalid';

export interface RevocationResult {
  code: RevocationCode;
  message: string;
}

/**
 * What a client's revocation did: the spec 2.2 record, exactly as the endpoint answers it, and
 * beside it (never serialised) the jti of the token it acted on and what was done, for the
 * request log and the metrics.
 */
export interface Revocation {
  /** Spec 2.2: the wire record, and nothing else. */
  result: RevocationResult;
  /**
   * The jti of the token revoked, or found already revoked; null for `token_invalid`, which says
   * nothing about an unknown, expired or other client's token (contract 3).
   */
  jti: string | null;
  done: ClientAction;
}

/**
 * What the engine did for a client's request, as far as the request log and the operator's
 * metrics need to know (never a token): the one vocabulary of outcomes, from the engine's
 * results to the HTTP observer's records (`http/observer.ts`) and the metrics' labels.
 */
export type ClientAction =
  /** Spec 4.1: an access token minted; `rotated` when a new refresh token replaced the presented one. */
  | { kind: 'refreshed'; rotated: boolean }
  /** Spec 4.2: the token revoked; `grant` when its whole grant went with it (a refresh token). */
  | { kind: 'revoked'; grant: boolean }
  /** Spec 4.2 of a token unknown, expired, another client's or already revoked: nothing changed (still 200). */
  | { kind: 'revoke_noop' }
  /** Spec 4.3. */
  | { kind: 'introspected'; active: boolean }
  /**
   * A refresh refused (401 invalid_token) because a replaced refresh token was presented again:
   * its grant was revoked, `tokens` tokens (RFC 9700 §4.14.2; ReuseDetectedError).
   */
  | { kind: 'reuse_detected'; tokens: number }
  /** RFC 6749 §4.1.3: an authorization code exchanged for a new grant. */
  | { kind: 'code_exchanged' }
  /** RFC 6749 §4.1.2: an authorization code presented again: its grant was revoked, `tokens` tokens. */
  | { kind: 'code_replayed'; tokens: number }
  /** RFC 6749 §4.4: an access token for the client itself. */
  | { kind: 'client_credentials' };

/**
 * The answer of the engine to a client's request at one of the three endpoints: the wire record
 * (`result`, exactly what the endpoint sends) and, beside it, what the request log and the
 * metrics need: who asked, the jti acted on, and what was done.
 */
export interface ClientOutcome<T> {
  result: T;
  /** The authenticated client. */
  clientId: string;
  /** The jti of the token produced (refresh) or acted on; null when none is told (an inactive token). */
  jti: string | null;
  done: ClientAction;
  /** A fresh DPoP nonce to send back (`DPoP-Nonce`, RFC 9449 §8), when the server hands them out. */
  dpopNonce?: string;
}

/** Spec 2.3 for an active token: all twelve fields. */
export interface ActiveIntrospection {
  active: true;
  scope: string;
  client_id: string;
  username: string;
  token_type: TokenType;
  exp: number;
  iat: number;
  nbf: number;
  sub: string;
  aud: string;
  iss: string;
  jti: string;
  /** RFC 9449 §6.2 (RFC 7800 §3.1): the key a bound token is bound to; absent for a bearer token. */
  cnf?: { jkt: string };
}

/** Contract 3: a token that is not active reveals nothing else. */
export interface InactiveIntrospection {
  active: false;
}

export type IntrospectionResult = ActiveIntrospection | InactiveIntrospection;

/**
 * What an operator sees of a token (CLI `introspect`, `token list`): the verdict and its reason,
 * which the HTTP answer hides. Never the token itself.
 */
export interface TokenView {
  jti: string;
  type: TokenType;
  /** active, expired, revoked, or not_yet_valid / unknown for `inspect`. */
  state: TokenState;
  client_id: string;
  username: string;
  sub: string;
  scope: string;
  aud: string;
  node: string;
  grant_id: string;
  /** ISO-free numbers, milliseconds since the epoch. */
  issued_at: number;
  not_before: number;
  expires_at: number;
  revoked_at: number | null;
  replaced_at: number | null;
  /** The thumbprint of the DPoP key the token is bound to (RFC 9449 §6), null for a bearer token. */
  jkt: string | null;
}

/** `tokenctl introspect` locally: the verdict first, then what is known. */
export type Inspection =
  | { verdict: 'unknown' }
  | { verdict: 'active' | 'expired' | 'revoked' | 'not_yet_valid'; token: TokenView; introspection: IntrospectionResult };

/** A client as shown to operators: never the secret or its hash. */
export interface ClientView {
  client_id: string;
  name: string;
  type: 'confidential' | 'public';
  scope: string;
  org_id: string;
  audience: string;
  access_ttl_s: number | null;
  refresh_ttl_s: number | null;
  created_at: number;
  secret_updated_at: number;
  /** RFC 7591 §2 client metadata names. */
  redirect_uris: string[];
  grant_types: string[];
  login_provider: boolean;
  /** Token requests without a DPoP proof are refused (contract 8). */
  require_dpop: boolean;
}
