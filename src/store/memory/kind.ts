/**
 * What the composition point (open-store.ts) knows of this store before loading it. The
 * in-memory store keeps nothing, so no location opens it from the command line: tests and
 * embedders make one with `new MemoryStore()`. It is listed so that every store folder has the
 * same layout, and a new store can copy any of them.
 */

/** No location: see above. */
export const matches = (_location: string): boolean => false;

export const isFile = false;

/** A memory location holds no password. */
export const showsPassword = (_location: string): boolean => false;

/** Nothing it does waits on another process. */
export function isConflictOrTimeout(_error: unknown): boolean {
  return false;
}
