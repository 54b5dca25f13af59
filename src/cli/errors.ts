import { Errors } from '@oclif/core';
import { engineErrorName, type EngineErrorName, type EngineErrorOf, type InvalidTokenReason } from '../engine/errors.js';
import { MigrateError } from '../migrate/errors.js';
import { NoStoreError, NotAStoreError, SchemaTooNewError, StoreLocationError, StoreUnavailableError } from '../store/store.js';
import { DurationError } from './duration.js';

/**
 * Exit codes, documented in the README. Scripts may rely on them.
 * 0 success · 1 failure (store, network, server error) · 2 usage or bad input ·
 * 3 token not active (`introspect`) · 4 not found (client, token, jti) ·
 * 5 not confirmed (a destructive command declined, or without a terminal and without --yes) ·
 * 6 no store at the location given (only serve, client create and migrate --to create one) ·
 * 130 interrupted (Ctrl-C or SIGTERM; what was done is printed and audited).
 */
export const EXIT = { ok: 0, failure: 1, usage: 2, inactive: 3, notFound: 4, notConfirmed: 5, noStore: 6, interrupted: 130 } as const;

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
  /** Machine-readable detail for `--json` (e.g. a server's status and answer). */
  details?: Record<string, unknown>;
}

/** The spec 7.1 description echoes the token; the CLI says why without printing it. */
const INVALID_TOKEN_TEXT: Record<InvalidTokenReason, string> = {
  expired: 'the refresh token has expired: the user must log in again',
  revoked: 'the refresh token has been revoked',
  replaced: 'the refresh token was replaced by a concurrent refresh (rotation): use the refresh token that refresh returned',
  unknown: 'the refresh token is not recognised (unknown here, not a refresh token, or issued to another client)',
};

/** How one of the engine's errors is told on the command line. */
interface EngineErrorExit<E> {
  exitCode: number;
  /** What the user reads; default the error's own message. */
  message?: (err: E) => string;
  hint?: string;
}

/**
 * Every error of the engine (`engine/errors.ts`) as an exit code: a table over ENGINE_ERRORS, so
 * that a new error without its row does not compile.
 */
const ENGINE_ERROR_EXITS = {
  NotFoundError: { exitCode: EXIT.notFound },
  InvalidClientError: { exitCode: EXIT.usage },
  InvalidTokenError: { exitCode: EXIT.failure, message: (err) => INVALID_TOKEN_TEXT[err.reason] },
  ReuseDetectedError: { exitCode: EXIT.failure, message: (err) => INVALID_TOKEN_TEXT[err.reason] },
  ServiceUnavailableError: { exitCode: EXIT.failure },
  // Refusals of what was asked: usage or bad input.
  InvalidRequestError: { exitCode: EXIT.usage },
  UnsupportedGrantTypeError: { exitCode: EXIT.usage },
  UnauthorizedClientError: { exitCode: EXIT.usage },
  UnsupportedTokenTypeError: { exitCode: EXIT.usage },
  InvalidScopeError: { exitCode: EXIT.usage },
  InvalidGrantError: { exitCode: EXIT.failure },
  InvalidDpopProofError: { exitCode: EXIT.failure, hint: 'the token is bound to a DPoP key (RFC 9449): present a proof made with that key' },
  UseDpopNonceError: { exitCode: EXIT.failure },
  CodeReplayedError: { exitCode: EXIT.failure },
  LoginRequestNotFoundError: { exitCode: EXIT.notFound },
  LoginRequestAnsweredError: { exitCode: EXIT.usage },
  InvalidInputError: { exitCode: EXIT.usage },
  AccessDeniedError: { exitCode: EXIT.usage },
  PartialBulkRevocationError: { exitCode: EXIT.usage },
  RefreshLimitError: { exitCode: EXIT.usage },
  TooManyAttemptsError: { exitCode: EXIT.usage },
} satisfies { [N in EngineErrorName]: EngineErrorExit<EngineErrorOf<N>> };

/**
 * oclif wraps an error thrown while parsing a flag value as
 * "Parsing --flag \n\t<message>\nSee more help with --help": say it on one line instead.
 */
function unwrapFlagParsing(message: string): string {
  const m = /^Parsing --(\S+) \n\t([\s\S]*?)\nSee more help with --help$/.exec(message);
  return m ? `--${m[1]}: ${m[2]}` : message;
}

/** oclif's parse errors, without their "The following error occurred:" frame and help footer. */
function tidyUsage(message: string): string {
  return unwrapFlagParsing(message)
    .replace(/^The following errors? occurred:\s*/, '')
    .replace(/\s*See more help with --help\s*$/, '')
    .split('\n')
    .map((line) => line.trim())
    .join('\n');
}

/**
 * A token or an authorization code in an error message (a server's spec 7.1 description echoes
 * it) is cut to its first characters: enough to tell which, not enough to use. The CLI prints a
 * token only when issuing, and a code never.
 */
export function redactTokens(text: string): string {
  return text.replace(/\b(tc[acr]_[A-Za-z0-9_-]{6})[A-Za-z0-9_-]{37}(?![A-Za-z0-9_-])/g, '$1…');
}

/**
 * For TOKENCTL_DEBUG's stack traces: tokens and codes cut as in {@link redactTokens} (also ones of another
 * length or a JWT), a password in a postgres:// URL, and every secret the command was given
 * (client secret, token) replaced wherever it appears.
 */
export function redactTrace(text: string, secrets: Iterable<string | undefined> = []): string {
  let out = text;
  for (const secret of secrets) if (secret && secret.length >= 4) out = out.split(secret).join('[redacted]');
  return out
    .replace(/\b(tc[acr]_[A-Za-z0-9_-]{6})[A-Za-z0-9_-]+/g, '$1…')
    .replace(/\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g, 'eyJ…[redacted JWT]')
    .replace(/(postgres(?:ql)?:\/\/[^:@/\s]*):[^@\s]*@/gi, '$1:***@')
    .replace(/([?&](?:ssl)?password=)[^&\s]*/gi, '$1***');
}

function redactDeep(value: unknown): unknown {
  if (typeof value === 'string') return redactTokens(value);
  if (Array.isArray(value)) return value.map(redactDeep);
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactDeep(v)]));
  return value;
}

/** Duck-typed so that this module need not load the HTTP client (`remote/http-client.ts`). */
function isRemoteError(err: unknown): err is Error & { status: number; body: unknown; usage?: boolean } {
  return err instanceof Error && err.name === 'RemoteError' && typeof (err as { status?: unknown }).status === 'number';
}

/** The one place where any error becomes what the CLI user sees. */
export function renderCliError(err: unknown): RenderedError {
  const rendered = render(err);
  return { ...rendered, message: redactTokens(rendered.message) };
}

function render(err: unknown): RenderedError {
  if (err instanceof CliError) return { code: err.code, message: err.message, exitCode: err.exitCode, hint: err.hint };
  const name = engineErrorName(err);
  if (name !== null) {
    const e = err as EngineErrorOf<typeof name>;
    const row = ENGINE_ERROR_EXITS[name] as EngineErrorExit<typeof e>;
    return { code: e.code, message: row.message?.(e) ?? e.message, exitCode: row.exitCode, ...(row.hint !== undefined && { hint: row.hint }) };
  }
  if (err instanceof MigrateError) return { code: err.code, message: err.message, exitCode: err.code === 'same_store' ? EXIT.usage : EXIT.failure, hint: err.hint };
  if (err instanceof DurationError) return { code: 'invalid_duration', message: unwrapFlagParsing(err.message), exitCode: EXIT.usage };
  if (isRemoteError(err)) {
    // The user's own --url or --ca was wrong: bad input (exit 2), no server was asked.
    if (err.usage === true) return { code: 'usage', message: err.message, exitCode: EXIT.usage };
    const hint = err.status === 401 ? 'check the client ID and secret (--client-id, TOKENCTL_CLIENT_SECRET, or the profile)' : undefined;
    return { code: 'remote_error', message: err.message, exitCode: EXIT.failure, hint, details: { status: err.status, body: redactDeep(err.body) } };
  }
  if (err instanceof NoStoreError) {
    return { code: 'no_store', message: err.message, exitCode: EXIT.noStore, hint: 'check --db (or TOKENCTL_DB); only serve, client create and migrate --to create a store' };
  }
  if (err instanceof NotAStoreError) {
    return { code: 'not_a_store', message: err.message, exitCode: EXIT.failure, hint: 'point --db (or TOKENCTL_DB) at a tokenctl store, or at a new file name to create one' };
  }
  if (err instanceof StoreLocationError) {
    return { code: 'store_location', message: err.message, exitCode: EXIT.usage, hint: err.hint };
  }
  if (err instanceof SchemaTooNewError) return { code: 'schema_too_new', message: err.message, exitCode: EXIT.failure };
  if (err instanceof StoreUnavailableError) return { code: 'store_unavailable', message: err.message, exitCode: EXIT.failure };
  if (err instanceof Errors.CLIError) {
    // oclif's own parse errors (unknown flag, missing argument...): usage.
    const exit = (err as Errors.CLIError & { oclif?: { exit?: number } }).oclif?.exit;
    return {
      code: 'usage',
      message: tidyUsage(err.message),
      exitCode: typeof exit === 'number' && exit !== 1 ? exit : EXIT.usage,
      hint: 'see --help for usage and examples',
    };
  }
  const message = err instanceof Error ? err.message : String(err);
  return { code: 'failure', message: `unexpected error: ${message}`, exitCode: EXIT.failure };
}
