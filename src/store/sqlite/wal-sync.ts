import fs from 'node:fs';
import { StoreUnavailableError } from '../store.js';

/**
 * The WAL's fsync, off the event loop, for a long-running server (group-commit.ts). Its
 * connection runs with `synchronous=NORMAL`: a commit writes its frames to the -wal file and
 * returns without waiting for the disk, and this syncs the file (fdatasync, on libuv's threads)
 * before the commit is acknowledged. That is what `synchronous=FULL` does inside the commit, on
 * the event loop; the durability of an acknowledged write is the same:
 *
 * - a sync of the file covers every frame written to it before the sync started, by any
 *   connection of any process (it is the file's pages that reach the disk, not one descriptor's);
 * - SQLite (NORMAL or FULL alike) syncs the WAL before a checkpoint copies it into the database,
 *   and the database after, so a commit checkpointed and its frames overwritten by a restarted
 *   WAL before this sync ran is on disk in the database file already;
 * - the -wal file is deleted only when the last connection closes, after a full checkpoint, and
 *   the server's own connection is open as long as this is.
 *
 * What differs: another connection may read a commit in the moment between its commit and its
 * sync. Nothing is acknowledged in that moment, and whatever that reader then writes is synced
 * with it, or after it, in the same file.
 */
export class WalSync {
  private fd: number | undefined;

  constructor(private readonly location: string) {}

  /** Syncs the -wal file as it is now; `done` is called once it is on disk, or with the reason not. */
  readonly sync = (done: (error: unknown) => void): void => {
    try {
      this.fd ??= fs.openSync(`${this.location}-wal`, 'r+');
    } catch (error) {
      done(this.failure(error));
      return;
    }
    fs.fdatasync(this.fd, (error) => done(error ? this.failure(error) : undefined));
  };

  /** Closes the file; only once no sync is in flight. */
  close(): void {
    if (this.fd !== undefined) fs.closeSync(this.fd);
    this.fd = undefined;
  }

  private failure(error: unknown): StoreUnavailableError {
    const code = (error as NodeJS.ErrnoException).code ?? String(error);
    return new StoreUnavailableError(`the store ${this.location} could not sync ${this.location}-wal to disk (${code}): check the disk and the file, then retry`, { cause: error });
  }
}
