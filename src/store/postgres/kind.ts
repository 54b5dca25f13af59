/**
 * What the composition point (open-store.ts) knows of this store before loading it: which
 * locations are its, and which of its driver's errors mean "busy, try again". No driver import:
 * open-store.ts reads every store's kind.ts at start-up and loads only the store it opens.
 */

/** A `postgres://` or `postgresql://` connection URL (libpq's schemes). */
export const matches = (location: string): boolean => /^postgres(ql)?:\/\//i.test(location);

/** The location is a URL, compared as written. */
export const isFile = false;

/** Whether the URL itself holds a password (`postgres://user:secret@host/db`), which `ps` and shell history then show. */
export const showsPassword = (location: string): boolean => /^postgres(ql)?:\/\/[^/@:?#]*:[^/@?#]+@/i.test(location);

/** SQLSTATEs of a transaction that lost a race or ran out of time (PostgreSQL appendix A). */
const CONFLICT_OR_TIMEOUT = new Set([
  '40001', // serialization_failure
  '40P01', // deadlock_detected
  '57014', // query_canceled: the statement timeout
]);

export function isConflictOrTimeout(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && CONFLICT_OR_TIMEOUT.has(code);
}
