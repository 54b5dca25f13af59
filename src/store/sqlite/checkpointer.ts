import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * WAL checkpoints on a thread of their own, for a long-running server. A checkpoint copies the
 * WAL's pages into the database file and syncs it; run by SQLite inside a commit (automatic
 * checkpoints), it blocks the event loop for tens of milliseconds every few thousand pages, and
 * every request waiting meanwhile waits that much longer: measured, it made refresh's p99 72 ms
 * where it is 21 ms without it. Here a worker thread, with a connection of
 * its own, runs a PASSIVE checkpoint whenever the WAL holds `frames` pages (what SQLite's automatic
 * checkpoint waits for) or `maxIntervalMs` has passed: it never waits for the server's writer or
 * readers, copies what they no longer need, and the server's next commit restarts the WAL from
 * the start once it has all been copied. Under writes that never pause it cannot copy all of it
 * (the writer appends meanwhile): the server's own commits then checkpoint past a high-water mark
 * (store.ts checkpointInBackground), which bounds the WAL. The thread runs at the lowest priority.
 * Durability is unchanged: a commit is synced to the WAL before it is acknowledged, whenever it is
 * checkpointed.
 */
const WORKER_SOURCE = `
const fs = require('node:fs');
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.module);
// The lowest priority (Linux: a thread is a task of its own, /proc/thread-self names it): on a
// busy server, and on one pinned to one core, the checkpoint then runs while the event loop
// waits instead of in its stead (it took 5 ms off refresh's p99). Should it fall
// behind, the server's own commits checkpoint (store.ts checkpointInBackground). Elsewhere: as is.
try {
  const tid = Number(fs.readlinkSync('/proc/thread-self').split('/').pop());
  if (tid > 0 && tid !== process.pid) require('node:os').setPriority(tid, 19);
} catch {}
const db = new Database(workerData.file, { fileMustExist: true, timeout: 0 });
db.pragma('cache_size = -512'); // a checkpoint reads WAL frames and writes pages: no cache needed
db.pragma('wal_autocheckpoint = 0');
// The WAL's last valid frame (mxFrame), from the wal-index header at the start of the -shm file
// (https://sqlite.org/walformat.html: a u32 at byte 16, in the machine's byte order).
const shm = fs.openSync(workerData.file + '-shm', 'r');
const header = Buffer.alloc(4);
const frames = () => (fs.readSync(shm, header, 0, 4, 16) === 4 ? header.readUInt32LE(0) : Infinity);
let timer;
let last = Date.now();
const tick = () => {
  // As SQLite's own automatic checkpoint would, once the WAL holds workerData.frames pages (so that
  // a page written again and again is copied once per checkpoint, not once per second), and at
  // least every workerData.maxIntervalMs.
  if (frames() >= workerData.frames || Date.now() - last >= workerData.maxIntervalMs) {
    try {
      db.pragma('wal_checkpoint(PASSIVE)');
    } catch (error) {
      // Busy (another process checkpoints, or the file is being recovered): next time.
      if (!/^SQLITE_BUSY|^SQLITE_LOCKED/.test(String(error && error.code))) throw error;
    }
    last = Date.now();
  }
  timer = setTimeout(tick, workerData.intervalMs);
};
parentPort.on('message', () => {
  clearTimeout(timer);
  fs.closeSync(shm);
  db.close();
  parentPort.close();
});
tick();
`;

export class BackgroundCheckpointer {
  private readonly worker: Worker;
  /** Resolves when the thread has ended, however it ended. */
  private readonly exited: Promise<void>;
  private stopped = false;

  /**
   * Starts checkpointing `file`. `onFailure` is called once if the thread fails (it cannot open
   * the file, or a checkpoint fails otherwise than busy): the caller should then let SQLite
   * checkpoint automatically again, so that the WAL cannot grow without bound.
   */
  constructor(file: string, onFailure: (error: unknown) => void, options: { frames: number; intervalMs?: number; maxIntervalMs?: number }) {
    // Resolved here, where the module resolution of the sources or of the bundle applies.
    const module = createRequire(import.meta.url).resolve('better-sqlite3');
    const workerData = { module, file, frames: options.frames, intervalMs: options.intervalMs ?? 100, maxIntervalMs: options.maxIntervalMs ?? 5_000 };
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData });
    this.worker.unref(); // never what keeps a process alive
    this.exited = new Promise((resolve) => this.worker.once('exit', () => resolve()));
    let failed = false;
    const fail = (error: unknown) => {
      if (failed || this.stopped) return;
      failed = true;
      onFailure(error);
    };
    this.worker.on('error', fail);
    this.worker.on('exit', (code) => fail(new Error(`the checkpoint thread exited (${code})`)));
  }

  /** Stops the thread, closing its connection; resolves once it has. */
  async stop(): Promise<void> {
    if (this.stopped) return this.exited;
    this.stopped = true;
    this.worker.postMessage('stop'); // a thread that has ended already ignores it
    const timeout = setTimeout(() => void this.worker.terminate(), 2_000);
    await this.exited;
    clearTimeout(timeout);
  }
}
