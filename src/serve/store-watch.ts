import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { storeKindOf } from '../store/open-store.js';
import { ServeError } from './errors.js';
import type { Engine } from '../engine/engine.js';

/** How often `serve` looks at its store file. */
const WATCH_INTERVAL_MS = 2_000;

/**
 * Refuses to serve a store it cannot write: `serve` would otherwise start, answer every read,
 * and fail every refresh and revocation. The check revokes a grant that does not exist (a write
 * transaction that changes nothing), as /healthz does.
 */
export async function checkStoreWritable(engine: Engine): Promise<void> {
  try {
    await engine.store.revokeGrant('tokenctl-serve-write-check', Date.now(), {});
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new ServeError(`cannot serve the store ${engine.store.location}: it cannot be written (${reason})`, 'store_not_writable', 'failure', 'serve needs a store it can write: check the file, its directory and the mount');
  }
}

/**
 * Watches an SQLite store file (not a PostgreSQL URL): resolves with a message when the file at
 * `location` is deleted or replaced (another inode) under the running server, which then still
 * writes to the file it opened while every CLI command opens the new one. Checked every 2 s by
 * a stat, cheap and portable (fs.watch misses a rename on some filesystems). `stop()` ends it.
 */
export function watchStoreFile(location: string): { changed: Promise<string>; stop(): void } {
  if (!storeKindOf(location).isFile) return { changed: new Promise<string>(() => undefined), stop: () => undefined };
  const file = resolve(location);
  const first = statSync(file, { throwIfNoEntry: false });
  let timer: NodeJS.Timeout | undefined;
  const changed = new Promise<string>((done) => {
    if (first === undefined) return;
    timer = setInterval(() => {
      const now = statSync(file, { throwIfNoEntry: false });
      if (now === undefined) done(`the store file ${file} was deleted while serving`);
      else if (now.ino !== first.ino || now.dev !== first.dev) done(`the store file ${file} was replaced while serving (another file now has its name)`);
      else return;
      clearInterval(timer);
    }, WATCH_INTERVAL_MS);
    timer.unref();
  });
  return { changed, stop: () => clearInterval(timer) };
}
