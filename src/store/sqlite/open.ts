import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { NoStoreError, NotAStoreError, StoreLocationError, type StoreObserver } from '../store.js';
import { BUSY_TIMEOUT_MS, mapError } from './errors.js';
import { identify, LATEST_SCHEMA_VERSION, migrate } from './migrations.js';

/*
 * Opening a store file: what is checked before SQLite touches it, the pragmas every connection
 * of a writing process gets, and the read-only fallback for a user who may not write the file.
 */

const SQLITE_HEADER = Buffer.from('SQLite format 3\0', 'latin1');
/** Page cache per connection, KiB (PRAGMA cache_size takes a negative number for KiB). */
const PAGE_CACHE_KIB = 16 * 1024;
/**
 * WAL frames (pages) after which a commit checkpoints them into the database file. SQLite's
 * default, 1,000 (4 MB), makes every seventh or so group commit of a busy server also copy a
 * thousand scattered pages into the file and fsync it, on the event loop: writes with random
 * keys (digest, jti, grant indexes) dirty a few leaves each, so a larger WAL coalesces many
 * more rewrites of the same page per checkpoint. 10,000 frames is about 40 MB of WAL on disk
 * (not memory: the wal-index in shared memory is ~80 KB). Durability is unchanged: a commit is
 * synced to the WAL before it is acknowledged, whenever it is checkpointed.
 */
export const WAL_AUTOCHECKPOINT_PAGES = 10_000;
/**
 * With background checkpoints, a commit of the server's own connection checkpoints (SQLite's
 * automatic checkpoint) once the WAL holds this many times the thread's pages: the bound of the
 * WAL when the thread falls behind (see store.ts checkpointInBackground).
 */
export const WAL_HIGH_WATER_FACTOR = 4;
/** After a checkpoint, the WAL file is truncated back to this size (bytes) when it grew past it. */
const WAL_SIZE_LIMIT = 64 * 1024 * 1024;

/** Options of {@link SqliteStore.open}. */
export interface SqliteOpenOptions {
  /** Create the file (and the tables) if missing (default true); false: throw NoStoreError. */
  create?: boolean;
  /** The caller only reads: open a store this user may not write read-only instead of failing. */
  readOnly?: boolean;
  /** A long-running server: checkpoint the WAL on a thread of its own (checkpointer.ts). */
  backgroundCheckpoints?: boolean;
  /**
   * With `backgroundCheckpoints`: the WAL pages at which the thread checkpoints (default
   * {@link WAL_AUTOCHECKPOINT_PAGES}); the store's own commits checkpoint past
   * {@link WAL_HIGH_WATER_FACTOR} times as many (store.ts checkpointInBackground). For tests.
   */
  checkpointPages?: number;
  /**
   * With `backgroundCheckpoints`: the thread checkpoints at least this often (ms), however few
   * pages the WAL holds (default 5 s, checkpointer.ts). For tests.
   */
  checkpointMaxIntervalMs?: number;
  /**
   * A long-running server: commits do not wait for the disk on the event loop; each is
   * acknowledged once the WAL has been synced on a thread (wal-sync.ts). Same durability.
   */
  syncOffLoop?: boolean;
  /** Told of commit batches and row-cache hits (metrics). */
  observer?: StoreObserver;
}

/** A connection to a store file, set up and migrated. */
export interface OpenedFile {
  db: Database.Database;
  /** The absolute path. */
  location: string;
  /** Opened read-only: the user may not write the file (only with `readOnly`). */
  readonly: boolean;
}

/**
 * Opens (and with `create`, the default, creates) the store at `file`. A new file is created
 * readable by its owner only; SQLite gives the -wal and -shm files the same mode. Nothing is
 * written to a file before it is known to be empty or a tokenctl store.
 */
export function openFile(file: string, options: SqliteOpenOptions): OpenedFile {
  const location = path.resolve(file);
  const dir = path.dirname(location);
  const create = options.create ?? true;
  if (!fs.statSync(dir, { throwIfNoEntry: false })?.isDirectory()) {
    if (!create) throw new NoStoreError(location, `the directory ${dir} does not exist`);
    throw new StoreLocationError(`cannot open the store ${location}: the directory ${dir} does not exist`, `create it first (mkdir -p ${dir}), or check --db (or TOKENCTL_DB)`);
  }
  if (!fs.existsSync(location)) {
    if (!create) throw new NoStoreError(location, 'the file does not exist');
    createPrivateFile(location);
  }
  checkHeader(location);
  // A store the user may read but not write (a 0444 file, or one in a directory they cannot
  // write, where SQLite cannot make its -wal and -shm files) is opened read-only for reading.
  const readonly = options.readOnly === true && !writable(location);
  if (!readonly && !canWrite(location)) {
    throw new StoreLocationError(
      `the store ${location} cannot be written by this user (its mode, its directory's, a read-only file system or an immutable file), and this command writes to it: run it as a user who may write it, or make it writable`,
    );
  }
  let db: Database.Database | undefined;
  try {
    db = readonly ? openReadOnly(location) : new Database(location, { fileMustExist: true, timeout: BUSY_TIMEOUT_MS });
    // Identified before the first write below, so that a foreign file stays untouched.
    const version = identify(db, location);
    if (version === 0 && !create) throw new NoStoreError(location, 'the file is empty');
    if (readonly) {
      if (version < LATEST_SCHEMA_VERSION) {
        throw new StoreLocationError(`the store ${location} needs an upgrade to schema version ${LATEST_SCHEMA_VERSION}, and this user may not write it: run any writing command (e.g. tokenctl serve) as its owner once`);
      }
      db.pragma(`cache_size = -${PAGE_CACHE_KIB}`);
      return { db, location, readonly };
    }
    if (version === 0) makePrivate(location); // an empty file someone else created
    switchToWal(db, location);
    db.pragma('synchronous = FULL');
    db.pragma('foreign_keys = ON');
    // 16 MiB of page cache instead of SQLite's 2 MB: a large store's interior B-tree pages (and
    // many leaves) stay in memory, so a lookup in 1M tokens costs about what it does in 1k
    // (32 MiB measured the same on the 1M store, and cost 16 MB more RSS under writes).
    // Bounded, so that a server stays well within its memory budget. Not mmap: mapped pages
    // would count against the process for the whole file.
    db.pragma(`cache_size = -${PAGE_CACHE_KIB}`);
    db.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
    db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT}`);
    // Only a store behind takes the write lock to migrate: a current one opens without it, so a
    // command does not wait behind a busy server's commit just to start.
    if (version < LATEST_SCHEMA_VERSION) migrate(db, location);
    // FULL: SQLite syncs the WAL inside each commit (the migration's too). A server's commits are
    // synced off the event loop instead (wal-sync.ts), after a NORMAL commit: the same durability
    // once acknowledged.
    if (options.syncOffLoop) db.pragma('synchronous = NORMAL');
    // A server's writes wait for another process's lock off the event loop (group-commit.ts), so
    // SQLite's busy handler, which sleeps on this thread, may hold it only briefly.
    if (options.syncOffLoop) db.pragma('busy_timeout = 20');
    return { db, location, readonly };
  } catch (error) {
    db?.close();
    throw mapError(error, location);
  }
}

/**
 * Puts a connection in WAL mode. Two processes opening a new file at the same moment can
 * deadlock here: one, still seeing rollback-journal mode, waits for the exclusive lock the switch
 * needs while holding a PENDING lock, and that blocks the other's reads until the whole busy
 * timeout runs out ("locked by another process" on a file nobody else uses). So the switch waits
 * only briefly and retries, with jitter, letting the other go first; the busy timeout still
 * bounds the whole.
 */
function switchToWal(db: Database.Database, location: string): void {
  const deadline = Date.now() + BUSY_TIMEOUT_MS;
  db.pragma('busy_timeout = 20');
  try {
    for (;;) {
      try {
        const mode = db.pragma('journal_mode = WAL', { simple: true });
        if (mode !== 'wal') throw new Error(`cannot use ${location}: SQLite refused WAL journal mode (got ${String(mode)})`);
        return;
      } catch (error) {
        const busy = error instanceof Database.SqliteError && /^SQLITE_(BUSY|LOCKED)/.test(error.code);
        if (!busy || Date.now() > deadline) throw error;
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5 + Math.floor(Math.random() * 30));
      }
    }
  } finally {
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
  }
}

/** Whether this process may write the store file and its directory (for the -wal and -shm files). */
function writable(location: string): boolean {
  return canWrite(location) && canWrite(path.dirname(location));
}

function canWrite(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Opens a store this user may not write. SQLite reads a WAL database through its -shm file, which
 * it cannot create in a directory the user may not write (SQLITE_READONLY_DIRECTORY). With no
 * -wal file (or an empty one) every commit is in the main file, and nobody is writing it: its
 * contents are then read once into memory, as a rollback-journal database, and served from there.
 */
function openReadOnly(location: string): Database.Database {
  const db = new Database(location, { readonly: true, fileMustExist: true, timeout: BUSY_TIMEOUT_MS });
  try {
    db.pragma('schema_version');
    return db;
  } catch (error) {
    db.close();
    if (!(error instanceof Database.SqliteError && error.code === 'SQLITE_READONLY_DIRECTORY')) throw error;
  }
  if ((fs.statSync(`${location}-wal`, { throwIfNoEntry: false })?.size ?? 0) > 0) {
    throw new StoreLocationError(
      `cannot read the store ${location}: its latest commits are in ${location}-wal, and SQLite needs to write ${location}-shm to read them, in a directory this user may not write; run the command as the store's owner`,
    );
  }
  const image = fs.readFileSync(location);
  if (image.length >= 20 && image[18] === 2) image.fill(1, 18, 20); // WAL format → rollback journal, in the copy only
  return new Database(image, { readonly: true });
}

/** Creates an empty file, mode 0600, unless another process just did. */
function createPrivateFile(location: string): void {
  let fd: number;
  try {
    fd = fs.openSync(location, 'wx', 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return;
    throw error;
  }
  try {
    fs.fchmodSync(fd, 0o600); // the umask may have narrowed it further; the owner still needs rw
  } finally {
    fs.closeSync(fd);
  }
}

/** Narrows an empty file about to become a store to mode 0600; SQLite copies it to -wal and -shm. */
function makePrivate(location: string): void {
  if ((fs.statSync(location).mode & 0o077) !== 0) fs.chmodSync(location, 0o600);
}

/** Rejects anything but a regular file that is empty or starts with the SQLite header. */
function checkHeader(location: string): void {
  const stat = fs.statSync(location);
  if (!stat.isFile()) throw new NotAStoreError(location, 'it is not a regular file');
  if (stat.size === 0) return;
  const head = Buffer.alloc(SQLITE_HEADER.length);
  const fd = fs.openSync(location, 'r');
  try {
    fs.readSync(fd, head, 0, head.length, 0);
  } finally {
    fs.closeSync(fd);
  }
  if (!head.equals(SQLITE_HEADER)) throw new NotAStoreError(location, 'it is not an SQLite database');
}
