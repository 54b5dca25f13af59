import { DuplicateClientError, NotAStoreError, SchemaTooNewError, StoreUnavailableError } from '../store.js';

/**
 * The URL an operator may see: no password, whether it is in the user-info part or in a
 * `password=` query parameter. Works on URLs that `new URL` rejects (a host-less
 * `postgres://user:pw@/db?host=/run/postgresql`), because pg accepts those too.
 */
export function redactUrl(url: string): string {
  return url
    .replace(/^([a-z][a-z0-9+.-]*:\/\/[^:@/?#]*):[^/?#]*@/i, '$1@') // up to the last @, as URL parsing does
    .replace(/([?&](?:ssl)?password=)[^&#]*/gi, '$1***');
}

/** Node's socket errors that mean "the server cannot be reached", with words for an operator. */
const SOCKET_ERRORS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ECONNABORTED: 'connection aborted',
  EPIPE: 'connection closed',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ENETDOWN: 'network down',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  ENOENT: 'no server socket at that path',
};

/** SQLSTATEs that mean "not now" rather than "wrong request" (PostgreSQL appendix A). */
const UNAVAILABLE_SQLSTATES: Record<string, string> = {
  '57P01': 'the server closed the connection (shutdown, or an administrator ended it)',
  '57P02': 'the server crashed (crash shutdown)',
  '57P03': 'the server is not accepting connections yet',
  '57014': 'the statement timed out',
  '53300': 'too many connections',
  '28000': 'the server refused the connection',
  '28P01': 'authentication failed',
  '3D000': 'the database does not exist',
  // A host that was the primary and is now read-only (fenced, or a standby since a failover).
  '25006': 'the server is read-only (a standby, or a primary being failed over)',
};

/** pg's own messages, which carry no code, for a connection that broke or never came. */
const PG_CONNECTION_MESSAGES: [RegExp, string][] = [
  [/timeout exceeded when trying to connect|connection timeout/i, 'no connection within the connection timeout'],
  [/Query read timeout/i, 'no answer within the query timeout'],
  [/Connection terminated|not queryable|Client was closed/i, 'the connection was lost'],
];

/** The SQLSTATE of a pg error, or the errno code of a socket error (also inside an AggregateError). */
export function errorCode(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  const inner = (error as { errors?: unknown }).errors;
  return Array.isArray(inner) ? errorCode(inner[0]) : undefined;
}

function serverMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Why the server is unavailable, or undefined when `error` is something else. */
function unavailableReason(error: unknown): string | undefined {
  const code = errorCode(error);
  if (code !== undefined) {
    if (code in SOCKET_ERRORS) return SOCKET_ERRORS[code];
    // 28000 covers both a pg_hba.conf refusal and a role that does not exist: the server's own
    // message (which never holds the password) says which.
    if (code.startsWith('28') || code === '3D000') return `${UNAVAILABLE_SQLSTATES[code] ?? 'authentication failed'} (${serverMessage(error)})`;
    if (code in UNAVAILABLE_SQLSTATES) return UNAVAILABLE_SQLSTATES[code];
    // The server's (or a pooler's) own words, e.g. PgBouncer's "unsupported startup parameter: options".
    if (code.startsWith('08')) return error instanceof Error && error.message ? `connection failure: ${error.message}` : 'connection failure';
    if (code.startsWith('53')) return 'the server is out of resources';
  }
  const message = error instanceof Error ? error.message : '';
  return PG_CONNECTION_MESSAGES.find(([pattern]) => pattern.test(message))?.[1];
}

/**
 * pg's errors in the store's vocabulary: anything that says the server cannot be reached or
 * cannot answer becomes a {@link StoreUnavailableError} naming `location` (never the password),
 * with the original error as its `cause`. Everything else is returned unchanged.
 */
export function mapPgError(error: unknown, location: string): unknown {
  if (
    error instanceof StoreUnavailableError ||
    error instanceof NotAStoreError ||
    error instanceof SchemaTooNewError ||
    error instanceof DuplicateClientError
  ) {
    return error;
  }
  const reason = unavailableReason(error);
  if (reason === undefined) return error;
  return new StoreUnavailableError(`the PostgreSQL store ${location} is unavailable: ${reason}`, { cause: error });
}

/** A deadlock or serialization failure: the transaction was rolled back and may simply be run again. */
export function isRetryable(error: unknown): boolean {
  const code = errorCode(error);
  return code === '40P01' || code === '40001';
}

/** A unique violation on the named constraint. */
export function isUniqueViolation(error: unknown, constraint: string): boolean {
  return errorCode(error) === '23505' && (error as { constraint?: unknown }).constraint === constraint;
}
