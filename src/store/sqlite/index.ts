/**
 * The SQLite store's door: the only module imported from outside `sqlite/`.
 */
import type { OpenStoreOptions, TokenStore } from '../store.js';
import { SqliteStore } from './store.js';

export { SqliteStore } from './store.js';
export type { SqliteOpenOptions } from './open.js';
export { LATEST_SCHEMA_VERSION, migrate } from './migrations.js';

/** Opens (with `create`, the default, creates) the store in the file `location`. */
export async function open(location: string, options: OpenStoreOptions): Promise<TokenStore> {
  return SqliteStore.open(location, {
    create: options.create ?? true,
    readOnly: options.readOnly ?? false,
    backgroundCheckpoints: options.backgroundCheckpoints ?? false,
    syncOffLoop: options.backgroundCheckpoints ?? false,
    observer: options.observer,
  });
}
