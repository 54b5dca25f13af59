import { describe, expect, it } from 'vitest';
import { ENGINE_ERRORS, engineErrorName, InvalidClientError, TokenctlError } from '../../src/engine/errors.js';
import { errorAnswer } from '../../src/http/error-answer.js';
import { UnsupportedClientAuthError } from '../../src/http/transport-errors.js';
import { ENGINE_ERROR_SAMPLES, exportedEngineErrorClasses } from '../helpers/engine-errors.js';

/**
 * Every error of the engine has its answer (http/error-answer.ts): the table is checked for
 * completeness by the compiler (`satisfies` over ENGINE_ERRORS), and here every class
 * engine/errors.ts exports is in ENGINE_ERRORS and is answered as one of ours, never as the 500
 * of an unexpected error.
 */
describe('the table of engine errors → HTTP answers', () => {
  it('every error class engine/errors.ts exports is listed in ENGINE_ERRORS', () => {
    const listed = new Set<unknown>(Object.values(ENGINE_ERRORS));
    const exported = exportedEngineErrorClasses();
    expect(exported.length).toBeGreaterThanOrEqual(15);
    for (const [name, type] of exported) expect(listed.has(type), `${name} is not in ENGINE_ERRORS`).toBe(true);
  });

  it.each(Object.entries(ENGINE_ERROR_SAMPLES))('%s has its own answer', (name, err) => {
    expect(engineErrorName(err)).toBe(name);
    const a = errorAnswer(err, '/oauth/token');
    expect(a.unexpected).toBe(false);
    expect([400, 401, 403, 404, 409, 429, 503]).toContain(a.status);
    expect(JSON.parse(a.payload.toString())).toEqual({ error: a.errorCode, error_description: err.message });
  });

  it('the statuses and headers of the errors that are not a plain 400', () => {
    const status = (name: keyof typeof ENGINE_ERROR_SAMPLES) => errorAnswer(ENGINE_ERROR_SAMPLES[name], '/oauth/revocation', 'Basic x');
    expect(status('InvalidClientError')).toMatchObject({ status: 401, errorCode: 'invalid_client', headers: { 'www-authenticate': 'Basic realm="tokenctl"' } });
    expect(errorAnswer(ENGINE_ERROR_SAMPLES.InvalidClientError, '/oauth/revocation').headers).toBeUndefined();
    expect(status('InvalidTokenError')).toMatchObject({ status: 401, errorCode: 'invalid_token', headers: undefined });
    expect(status('ReuseDetectedError')).toMatchObject({ status: 401, errorCode: 'invalid_token' });
    expect(status('AccessDeniedError')).toMatchObject({ status: 403, errorCode: 'access_denied' });
    expect(status('TooManyAttemptsError')).toMatchObject({ status: 429, errorCode: 'temporarily_unavailable', headers: { 'retry-after': '30' } });
    expect(status('RefreshLimitError')).toMatchObject({ status: 429, headers: { 'retry-after': '60' } });
    expect(status('ServiceUnavailableError')).toMatchObject({ status: 503, headers: { 'retry-after': '2' } });
    expect(status('UnauthorizedClientError')).toMatchObject({ status: 400, errorCode: 'unauthorized_client' });
    expect(status('InvalidInputError')).toMatchObject({ status: 400, errorCode: 'invalid_request' });
  });

  it('a subclass made elsewhere is answered as its parent; an unlisted error of ours would be a logged 500, not a silent 400', () => {
    const noCredentials = new UnsupportedClientAuthError('', 'Client authentication is required');
    expect(engineErrorName(noCredentials)).toBe('InvalidClientError');
    expect(errorAnswer(noCredentials, '/oauth/token')).toMatchObject({ status: 401, errorCode: 'invalid_client', unexpected: false });
    expect(noCredentials).toBeInstanceOf(InvalidClientError);
    class Unlisted extends TokenctlError {
      readonly code = 'unlisted';
    }
    expect(engineErrorName(new Unlisted('x'))).toBeNull();
    expect(errorAnswer(new Unlisted('x'), '/oauth/token')).toMatchObject({ status: 500, errorCode: 'server_error', unexpected: true });
  });
});
