/**
 * What the composition point (open-store.ts) knows of this store before loading it: which
 * locations are its, and which of its driver's errors mean "busy, try again". No driver import:
 * open-store.ts reads every store's kind.ts at start-up and loads only the store it opens.
 */

/** Any location no other kind claims: a file path (the default store). */
export const matches = (_location: string): boolean => true;

/** The location is a file on this machine: resolved against the working directory, checked to exist. */
export const isFile = true;

/** A file path holds no password. */
export const showsPassword = (_location: string): boolean => false;

/** SQLite's SQLITE_BUSY: another connection held the write lock past the busy timeout. */
export function isConflictOrTimeout(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'SQLITE_BUSY';
}
