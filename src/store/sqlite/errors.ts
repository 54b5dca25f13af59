import Database from 'better-sqlite3';
import { NotAStoreError, StoreUnavailableError } from '../store.js';

/** How long a write waits for another process (a running server, a CLI command) to finish its own. */
export const BUSY_TIMEOUT_MS = 5000;

/** SQLite's errors as the store's own (store.ts); anything else unchanged. */
export function mapError(error: unknown, location: string): unknown {
  if (isMissingNativeBuild(error)) return new StoreUnavailableError(missingNativeBuild(), { cause: error });
  if (!(error instanceof Database.SqliteError)) return error;
  if (/^SQLITE_(BUSY|LOCKED)/.test(error.code)) {
    return new StoreUnavailableError(`the store ${location} is locked by another process (waited ${BUSY_TIMEOUT_MS} ms)`, { cause: error });
  }
  if (error.code === 'SQLITE_NOTADB') return new NotAStoreError(location, 'it is not an SQLite database');
  // Storage faults: nothing was written, and a retry may succeed once the operator acts.
  if (error.code === 'SQLITE_FULL') {
    return new StoreUnavailableError(`the store ${location} cannot grow: the disk (or SQLite's page limit) is full; free space, then retry`, { cause: error });
  }
  if (error.code.startsWith('SQLITE_READONLY')) {
    return new StoreUnavailableError(`the store ${location} is read-only here: check the file's and directory's permissions and the mount`, { cause: error });
  }
  if (error.code.startsWith('SQLITE_IOERR') || error.code.startsWith('SQLITE_CANTOPEN')) {
    return new StoreUnavailableError(`the store ${location} cannot be read or written (${error.code}): check the disk and the file`, { cause: error });
  }
  // After SQLITE_FULL or an I/O error inside a group commit's savepoint, SQLite rolls the whole
  // transaction back by itself; the commit then finds none. Nothing of the batch was written.
  if (error.code === 'SQLITE_ERROR' && /no transaction is active/.test(error.message)) {
    return new StoreUnavailableError(`the store ${location} rolled back a write (a full disk or an I/O error): check the disk, then retry`, { cause: error });
  }
  return error;
}

/**
 * better-sqlite3 without its compiled module for this Node (an install that could neither
 * download a prebuilt binary nor compile one, or a Node upgraded since): its `bindings` lookup
 * fails at the first `new Database`, or the module was built for another NODE_MODULE_VERSION.
 */
function isMissingNativeBuild(error: unknown): boolean {
  return error instanceof Error && !(error instanceof Database.SqliteError) && /Could not locate the bindings file|better_sqlite3\.node|NODE_MODULE_VERSION/.test(error.message);
}

/** What to do about it, as docs/development.md ("Installing without the internet") says. */
export function missingNativeBuild(): string {
  return (
    `the SQLite driver (better-sqlite3) has no native build for Node.js ${process.version}: run \`npm rebuild better-sqlite3\` in tokenctl's directory; ` +
    `without the internet, point it at Node's headers first (npm_config_nodedir=/usr when /usr/include/node exists; see docs/development.md, "Installing without the internet")`
  );
}

/** Runs `insert`; a row with the same key already there is thrown as `duplicate()` instead. */
export function insertUnique(insert: () => unknown, duplicate: () => Error): void {
  try {
    insert();
  } catch (error) {
    if (error instanceof Database.SqliteError && /^SQLITE_CONSTRAINT_(PRIMARYKEY|UNIQUE)$/.test(error.code)) throw duplicate();
    throw error;
  }
}
