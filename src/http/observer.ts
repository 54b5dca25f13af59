/**
 * What the HTTP layer tells whoever watches it (metrics, traces): one record per answer, written
 * by the one place that writes answers, whichever door the request came through (the fast path,
 * fastify's routes, or Node's parser refusing it). Never a token or a secret: the client id and
 * the outcome's counts only.
 */

/** Which endpoint answered. `other` is any other path (404, 405), so the label set stays bounded. */
export type EndpointName = 'token' | 'revocation' | 'introspection' | 'metadata' | 'health' | 'other';

/** What the engine did for a request it accepted, as far as counting needs. */
export type AnswerOutcome =
  /** /oauth/token: a refresh; `rotated` when a new refresh token was issued too. */
  | { kind: 'refreshed'; rotated: boolean }
  /** /oauth/revocation: the token revoked; `grant` when its whole grant went with it (a refresh token). */
  | { kind: 'revoked'; scope: 'single' | 'grant' }
  /** /oauth/revocation of a token that was unknown, expired or already revoked (still 200). */
  | { kind: 'revoke_noop' }
  /** /oauth/introspection. */
  | { kind: 'introspected'; active: boolean }
  /** /oauth/token, answered 401 invalid_token: a replaced refresh token presented again, its grant revoked (`tokens` of them). */
  | { kind: 'reuse_detected'; tokens: number };

export interface AnswerRecord {
  endpoint: EndpointName;
  status: number;
  /** The error code of a refused request (RFC 6749 §5.2 / RFC 7009 names), null when 2xx. */
  errorCode: string | null;
  /**
   * Why, in a bounded vocabulary, when there is one: an invalid token's reason (`expired`,
   * `revoked`, `replaced`, `unknown`), or a client-authentication failure's (`unknown_client`,
   * `bad_secret`, `no_secret`, `unexpected_secret`, `malformed_header`, `no_credentials`: see
   * `ClientAuthFailure`), or `rate_limited` (failed-authentication budget) and `refresh_limited`
   * (refreshes per minute). Null otherwise.
   */
  reason: string | null;
  /** The authenticated client, once known. */
  clientId: string | null;
  /** What the engine did, for a request that reached it and was accepted; null otherwise. */
  outcome: AnswerOutcome | null;
  /**
   * From the request taken up (its headers parsed) to the answer handed to the socket; 0 for a
   * request Node's parser refused, whose start is not known.
   */
  durationMs: number;
}

/**
 * Called once per answer, synchronously, after it is written: given as `buildServer`'s `observer`.
 * Must not throw, must be cheap. Not called for the 503 fastify writes itself to a request that
 * arrives while the server closes, nor for a connection closed without an answer.
 */
export type AnswerObserver = (record: AnswerRecord) => void;
