/**
 * The one error vocabulary of tokenctl. The engine throws these; `http/error-answer.ts` turns them
 * into the spec's records (7.1, 7.2, contract 3) and `cli/errors.ts` into messages and exit
 * codes, each through a table over {@link ENGINE_ERRORS}. Internal detail goes into `cause`,
 * never into the message.
 */
export abstract class TokenctlError extends Error {
  /** A stable machine-readable code (RFC 6749 §5.2 names where one applies). */
  abstract readonly code: string;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A required parameter is missing, repeated or malformed (RFC 6749 §5.2 invalid_request). */
export class InvalidRequestError extends TokenctlError {
  readonly code = 'invalid_request';
  constructor(
    message: string,
    readonly parameter?: string,
  ) {
    super(message);
  }
}

/** grant_type is none of the token endpoint's grants, `supported` (RFC 6749 §5.2). */
export class UnsupportedGrantTypeError extends TokenctlError {
  readonly code = 'unsupported_grant_type';
  constructor(
    readonly grantType: string,
    supported: readonly string[],
  ) {
    super(`grant_type "${grantType}" is not supported: this endpoint takes ${supported.map((t) => `grant_type=${t}`).join(', ')}`);
  }
}

/** The authenticated client may not use this grant type (RFC 6749 §5.2 unauthorized_client). */
export class UnauthorizedClientError extends TokenctlError {
  readonly code = 'unauthorized_client';
  constructor(readonly grantType: string) {
    super(`This client may not use grant_type=${grantType}`);
  }
}

/** token_type_hint is neither `access_token` nor `refresh_token` (RFC 7009 §2.2.1). */
export class UnsupportedTokenTypeError extends TokenctlError {
  readonly code = 'unsupported_token_type';
  constructor(readonly hint: string) {
    super(`unsupported_token_type: token_type_hint must be access_token or refresh_token (or be left out), not "${hint}"`);
  }
}

/**
 * Client authentication failed (spec 7.2; RFC 6749 invalid_client). The message names the client
 * ID as the spec's 7.2 record does, and never says which part was wrong.
 */
export class InvalidClientError extends TokenctlError {
  readonly code = 'invalid_client';
  constructor(
    readonly clientId: string,
    /** Why, for the operator's metrics only: never in the answer, which does not say which part was wrong. */
    readonly reason: ClientAuthFailure = 'bad_secret',
  ) {
    super(`The client account or password is incorrect: ${clientId}`);
  }
}

/**
 * Why a client authentication failed, in a bounded vocabulary: no such client (or an id that
 * cannot be one), a wrong password, a confidential client that sent none, a public client that
 * sent one, an Authorization header that is no Basic credential, or no credentials at all.
 */
export type ClientAuthFailure = 'unknown_client' | 'bad_secret' | 'no_secret' | 'unexpected_secret' | 'malformed_header' | 'no_credentials';

export type InvalidTokenReason = 'expired' | 'revoked' | 'replaced' | 'unknown';

/**
 * A refresh token cannot be used (spec 7.1; contract 3). Only the expired case carries the token
 * in its description, because spec 7.1 says so; the others never echo it.
 */
export class InvalidTokenError extends TokenctlError {
  readonly code = 'invalid_token';
  constructor(
    readonly reason: InvalidTokenReason,
    token: string,
  ) {
    super(InvalidTokenError.describe(reason, token));
  }

  static describe(reason: InvalidTokenReason, token: string): string {
    switch (reason) {
      case 'expired':
        return `The refresh token is invalid because it has expired: ${token}`;
      case 'revoked':
        return 'The refresh token is invalid because it has been revoked';
      case 'replaced':
        return 'The refresh token is invalid because a concurrent refresh replaced it: use the refresh token that refresh returned';
      case 'unknown':
        return 'The refresh token is invalid: it is not recognised';
    }
  }
}

/**
 * A replaced refresh token presented again (RFC 9700 §4.14.2): its whole grant was revoked
 * (`grantTokens` tokens). Answered as any revoked refresh token; the type tells the operator's
 * metrics that a copy of a token was caught.
 */
export class ReuseDetectedError extends InvalidTokenError {
  constructor(
    readonly grantTokens: number,
    token: string,
  ) {
    super('revoked', token);
  }
}

/** A requested scope exceeds the grant (RFC 6749 §6, invalid_scope). */
export class InvalidScopeError extends TokenctlError {
  readonly code = 'invalid_scope';
}

/** The authenticated client may not do this: it is not the client of a poll receiver (RFC 8935 §2.4 `access_denied`). */
export class AccessDeniedError extends TokenctlError {
  readonly code = 'access_denied';
}

/**
 * An authorization code that is unknown, expired, already used, issued to another client or for
 * another redirect URI, or whose PKCE verifier does not match (RFC 6749 §5.2 `invalid_grant`,
 * RFC 7636 §4.6). The description says which, never the code.
 */
export class InvalidGrantError extends TokenctlError {
  readonly code = 'invalid_grant';
}

/**
 * An authorization code presented a second time (RFC 6749 §4.1.2): refused, and the grant it
 * formed revoked, `grantTokens` tokens. Answered as {@link InvalidGrantError}.
 */
export class CodeReplayedError extends InvalidGrantError {
  constructor(readonly grantTokens: number) {
    super('The authorization code was already used; the tokens issued with it are now revoked');
  }
}

/**
 * A DPoP proof that does not hold (RFC 9449 §4.3), a token request without one from a client or
 * for a refresh token that needs one, or a proof by another key than the refresh token's (§5):
 * RFC 9449 §5 `invalid_dpop_proof`. Nothing was issued. `reason` is for metrics and tests.
 */
export class InvalidDpopProofError extends TokenctlError {
  readonly code = 'invalid_dpop_proof';
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * RFC 9449 §8: the server hands out nonces and the proof lacks the current one: `use_dpop_nonce`,
 * answered with `nonce` in the `DPoP-Nonce` header for the client to retry with.
 */
export class UseDpopNonceError extends TokenctlError {
  readonly code = 'use_dpop_nonce';
  constructor(readonly nonce: string) {
    super('Authorization server requires nonce in DPoP proof');
  }
}

/** The login app named a login request that does not exist or has expired (contract 5). */
export class LoginRequestNotFoundError extends TokenctlError {
  readonly code = 'login_request_not_found';
}

/** The login app answered a login request that was answered already ("answered once", contract 5). */
export class LoginRequestAnsweredError extends TokenctlError {
  readonly code = 'login_request_answered';
}

/** An operator named a client or token that does not exist. */
export class NotFoundError extends TokenctlError {
  readonly code = 'not_found';
}

/** An operator's input is not acceptable (bad scope string, bad secret, bad lifetime...). */
export class InvalidInputError extends TokenctlError {
  readonly code = 'invalid_input';
}

/** The service cannot answer now: store unreachable, or too much password hashing queued. */
export class ServiceUnavailableError extends TokenctlError {
  readonly code = 'temporarily_unavailable';
}

/**
 * A bulk revocation failed part way (the store went away, or stayed busy past the retry budget):
 * `revoked` tokens were revoked, in committed batches, before it did. Run it again to finish.
 */
export class PartialBulkRevocationError extends TokenctlError {
  readonly code = 'partially_revoked';
  constructor(
    readonly revoked: number,
    what: string,
    cause: unknown,
  ) {
    super(`the bulk revocation of ${what} failed after ${revoked} token(s) were revoked; run it again to revoke the rest`, { cause });
  }
}

/**
 * A refresh token (without rotation) minted its limit of access tokens in the last minute
 * (EngineConfig.maxRefreshesPerMinute): a leaked refresh token cannot mint tokens without bound.
 * Nothing was minted; `retryAfterSeconds` says when the limit allows one again at the latest.
 */
export class RefreshLimitError extends TokenctlError {
  readonly code = 'temporarily_unavailable';
  constructor(
    readonly max: number,
    readonly retryAfterSeconds: number,
  ) {
    super(`This refresh token was used ${max} times in the last minute, the most allowed; try again in ${retryAfterSeconds} s`);
  }
}

/**
 * Too many failed client authentications from this source address, or for this client id from a
 * source that has failed for it (RFC 6749 §2.3.1 asks for brute-force protection). Refused before
 * any password hash; `retryAfterSeconds` says when a new attempt will be looked at.
 */
export class TooManyAttemptsError extends TokenctlError {
  readonly code = 'temporarily_unavailable';
  constructor(readonly retryAfterSeconds: number) {
    super(`Too many failed client authentications from this address; try again in ${retryAfterSeconds} s`);
  }
}

/**
 * Every error of the engine, by name. `http/error-answer.ts` (status, code, headers) and
 * `cli/errors.ts` (exit code, message, hint) map them through tables typed over these names, so
 * that an error added here and forgotten there does not compile.
 */
export const ENGINE_ERRORS = {
  InvalidRequestError,
  UnsupportedGrantTypeError,
  UnauthorizedClientError,
  UnsupportedTokenTypeError,
  InvalidClientError,
  InvalidTokenError,
  ReuseDetectedError,
  InvalidScopeError,
  InvalidGrantError,
  CodeReplayedError,
  InvalidDpopProofError,
  UseDpopNonceError,
  LoginRequestNotFoundError,
  LoginRequestAnsweredError,
  AccessDeniedError,
  NotFoundError,
  InvalidInputError,
  ServiceUnavailableError,
  PartialBulkRevocationError,
  RefreshLimitError,
  TooManyAttemptsError,
};

export type EngineErrorName = keyof typeof ENGINE_ERRORS;
/** The error of the class named `N`. */
export type EngineErrorOf<N extends EngineErrorName> = InstanceType<(typeof ENGINE_ERRORS)[N]>;

const NAMES: ReadonlyMap<unknown, EngineErrorName> = new Map(Object.entries(ENGINE_ERRORS).map(([name, type]) => [type, name as EngineErrorName]));

/**
 * The name of `err`'s class in {@link ENGINE_ERRORS}: of its nearest ancestor there for a subclass
 * made elsewhere (it is answered as its parent is). Null for an error that is not the engine's.
 */
export function engineErrorName(err: unknown): EngineErrorName | null {
  if (!(err instanceof TokenctlError)) return null;
  for (let type: unknown = err.constructor; type !== TokenctlError && typeof type === 'function'; type = Object.getPrototypeOf(type)) {
    const name = NAMES.get(type);
    if (name !== undefined) return name;
  }
  return null;
}
