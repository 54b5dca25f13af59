/**
 * The in-memory store's door: the only module imported from outside `memory/`. The reference
 * implementation of the store contract, for tests and embedders; nothing is kept on disk.
 */
import type { OpenStoreOptions, TokenStore } from '../store.js';
import { MemoryStore } from './store.js';

export { MEMORY_SCHEMA_VERSION, MemoryStore } from './store.js';

/** A new, empty store; `location` and the options mean nothing to it. */
export async function open(_location: string, _options: OpenStoreOptions): Promise<TokenStore> {
  return new MemoryStore();
}
