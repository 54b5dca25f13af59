import { describe, expect, it } from 'vitest';
import { EXIT, renderCliError } from '../../src/cli/errors.js';
import { ENGINE_ERROR_SAMPLES } from '../helpers/engine-errors.js';

/**
 * Every error of the engine has its exit code (cli/errors.ts): the table is checked for
 * completeness by the compiler (`satisfies` over ENGINE_ERRORS); none is rendered as an
 * unexpected error.
 */
describe('the table of engine errors → exit codes', () => {
  it.each(Object.entries(ENGINE_ERROR_SAMPLES))('%s has its own exit code', (_name, err) => {
    const r = renderCliError(err);
    expect(r.code).toBe(err.code);
    expect(r.message).not.toMatch(/^unexpected error/);
    expect([EXIT.failure, EXIT.usage, EXIT.notFound]).toContain(r.exitCode);
  });

  it('not found is 4, an unusable refresh token 1 with the reason in words, client authentication 2', () => {
    expect(renderCliError(ENGINE_ERROR_SAMPLES.NotFoundError).exitCode).toBe(EXIT.notFound);
    expect(renderCliError(ENGINE_ERROR_SAMPLES.ReuseDetectedError)).toEqual({ code: 'invalid_token', message: 'the refresh token has been revoked', exitCode: EXIT.failure });
    expect(renderCliError(ENGINE_ERROR_SAMPLES.InvalidClientError).exitCode).toBe(EXIT.usage);
    expect(renderCliError(ENGINE_ERROR_SAMPLES.ServiceUnavailableError).exitCode).toBe(EXIT.failure);
  });
});
