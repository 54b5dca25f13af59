import * as errors from '../../src/engine/errors.js';
import type { EngineErrorName, EngineErrorOf } from '../../src/engine/errors.js';

/**
 * One instance of every error of the engine, by name: typed over ENGINE_ERRORS, so that this list
 * too must grow with it. For the tests of the renderers' tables (HTTP and CLI).
 */
export const ENGINE_ERROR_SAMPLES: { [N in EngineErrorName]: EngineErrorOf<N> } = {
  InvalidRequestError: new errors.InvalidRequestError('The parameter token is missing', 'token'),
  UnsupportedGrantTypeError: new errors.UnsupportedGrantTypeError('password', ['refresh_token']),
  UnauthorizedClientError: new errors.UnauthorizedClientError('refresh_token'),
  UnsupportedTokenTypeError: new errors.UnsupportedTokenTypeError('id_token'),
  InvalidClientError: new errors.InvalidClientError('web-app'),
  InvalidTokenError: new errors.InvalidTokenError('revoked', 'tcr_x'),
  ReuseDetectedError: new errors.ReuseDetectedError(3, 'tcr_x'),
  InvalidScopeError: new errors.InvalidScopeError('scope "admin" is not granted'),
  InvalidGrantError: new errors.InvalidGrantError('The authorization code is not recognised'),
  CodeReplayedError: new errors.CodeReplayedError(2),
  InvalidDpopProofError: new errors.InvalidDpopProofError('htu', "The DPoP proof's htu must be https://auth.example.test/oauth/token"),
  UseDpopNonceError: new errors.UseDpopNonceError('nonce-1'),
  LoginRequestNotFoundError: new errors.LoginRequestNotFoundError('There is no such login request'),
  LoginRequestAnsweredError: new errors.LoginRequestAnsweredError('This login request was answered already'),
  AccessDeniedError: new errors.AccessDeniedError('not a poll receiver'),
  NotFoundError: new errors.NotFoundError('no such client'),
  InvalidInputError: new errors.InvalidInputError('bad scope'),
  ServiceUnavailableError: new errors.ServiceUnavailableError('busy'),
  PartialBulkRevocationError: new errors.PartialBulkRevocationError(5, 'alice', new Error('gone')),
  RefreshLimitError: new errors.RefreshLimitError(120, 60),
  TooManyAttemptsError: new errors.TooManyAttemptsError(30),
};

/** Every class engine/errors.ts exports that is an error of the engine (the abstract base aside). */
export function exportedEngineErrorClasses(): [string, unknown][] {
  return Object.entries(errors).filter(
    ([, value]) => typeof value === 'function' && value !== errors.TokenctlError && (value as { prototype?: unknown }).prototype instanceof errors.TokenctlError,
  );
}
