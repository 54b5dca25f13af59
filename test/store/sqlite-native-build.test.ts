import { describe, expect, it } from 'vitest';
import { StoreUnavailableError } from '../../src/store/store.js';
import { mapError } from '../../src/store/sqlite/errors.js';

/** A better-sqlite3 that was never built (an offline install): a store error that says what to set. */
describe('the SQLite driver without its native build', () => {
  it.each([
    'Could not locate the bindings file. Tried:\n → /app/node_modules/better-sqlite3/build/better_sqlite3.node',
    "The module '/app/node_modules/better-sqlite3/build/Release/better_sqlite3.node' was compiled against a different Node.js version using NODE_MODULE_VERSION 115.",
  ])('%s → StoreUnavailableError naming npm rebuild and npm_config_nodedir', (message) => {
    const cause = new Error(message);
    const mapped = mapError(cause, '/srv/tokens.db');
    expect(mapped).toBeInstanceOf(StoreUnavailableError);
    expect((mapped as Error).message).toContain('npm rebuild better-sqlite3');
    expect((mapped as Error).message).toContain('npm_config_nodedir');
    expect((mapped as Error).cause).toBe(cause);
  });

  it('leaves other errors alone', () => {
    const other = new Error('ENOENT: no such file');
    expect(mapError(other, '/srv/tokens.db')).toBe(other);
  });
});
