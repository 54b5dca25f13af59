/**
 * What the HTTP layer tells whoever watches it (metrics, traces): one record per answer, written
 * by the one place that writes answers, whichever door the request came through (the fast path,
 * fastify's routes, or Node's parser refusing it). Never a token or a secret: the client id and
 * the outcome's counts only.
 */
import type { ClientAction } from '../engine/results.js';

/** Which endpoint answered. `other` is any other path (404, 405), so the label set stays bounded. */
export type EndpointName = 'token' | 'revocation' | 'introspection' | 'metadata' | 'health' | 'authorize' | 'login' | 'other';

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
  /** What the engine did, for a request that reached it (and was accepted, but for a reuse caught); null otherwise. */
  outcome: ClientAction | null;
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
