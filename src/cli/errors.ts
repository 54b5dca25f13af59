import { Errors } from '@oclif/core';
import * as engine from '../engine/errors.js';
import { NotAStoreError, SchemaTooNewError, StoreUnavailableError } from '../store/store.js';
import { DurationError } from './duration.js';

/**
 * Exit codes, documented in the README. Scripts may rely on them.
 * 0 success · 1 failure (store, network, server error) · 2 usage or bad input ·
 * 3 token not active (`introspect`) · 4 not found (client, token, jti) ·
 * 5 not confirmed (a destructive command declined, or without a terminal and without --yes).
 */
export const EXIT = { ok: 0, failure: 1, usage: 2, inactive: 3, notFound: 4, notConfirmed: 5 } as const;

/** An error the CLI raises itself, with its exit code and an optional hint. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
    readonly code = 'error',
    readonly hint?: string,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export interface RenderedError {
  code: string;
  message: string;
  exitCode: number;
  hint?: string;
}

/** The one place where any error becomes what the CLI user sees. */
export function renderCliError(err: unknown): RenderedError {
  if (err instanceof CliError) return { code: err.code, message: err.message, exitCode: err.exitCode, hint: err.hint };
  if (err instanceof engine.NotFoundError) return { code: err.code, message: err.message, exitCode: EXIT.notFound };
  if (err instanceof engine.InvalidClientError) return { code: err.code, message: err.message, exitCode: EXIT.usage };
  if (err instanceof engine.InvalidTokenError) return { code: err.code, message: err.message, exitCode: EXIT.failure };
  if (err instanceof engine.ServiceUnavailableError) return { code: err.code, message: err.message, exitCode: EXIT.failure };
  if (err instanceof engine.TokenctlError) return { code: err.code, message: err.message, exitCode: EXIT.usage };
  if (err instanceof DurationError) return { code: 'invalid_duration', message: err.message, exitCode: EXIT.usage };
  if (err instanceof NotAStoreError) {
    return { code: 'not_a_store', message: err.message, exitCode: EXIT.failure, hint: 'point --db (or TOKENCTL_DB) at a tokenctl store, or at a new file name to create one' };
  }
  if (err instanceof SchemaTooNewError) return { code: 'schema_too_new', message: err.message, exitCode: EXIT.failure };
  if (err instanceof StoreUnavailableError) return { code: 'store_unavailable', message: err.message, exitCode: EXIT.failure };
  if (err instanceof Errors.CLIError) {
    // oclif's own parse errors (unknown flag, missing argument...): usage.
    const exit = (err as Errors.CLIError & { oclif?: { exit?: number } }).oclif?.exit;
    return { code: 'usage', message: err.message, exitCode: typeof exit === 'number' && exit !== 1 ? exit : EXIT.usage };
  }
  const message = err instanceof Error ? err.message : String(err);
  return { code: 'failure', message: `unexpected error: ${message}`, exitCode: EXIT.failure };
}
