import type Database from 'better-sqlite3';
import { NotAStoreError, SchemaTooNewError } from '../store.js';
import type { Migration } from './migrations/migration.js';
import { MIGRATIONS_1_TO_3 } from './migrations/v1-3.js';
import { MIGRATIONS_4_TO_5 } from './migrations/v4-5.js';
import { MIGRATIONS_6_TO_9 } from './migrations/v6-9.js';
import { MIGRATION_11_STREAM_PAUSED } from './migrations/v11.js';

export type { Migration } from './migrations/migration.js';

/**
 * Marks a file as a tokenctl store in the SQLite header (`PRAGMA application_id`, the ASCII
 * bytes "tkct"), so that `file(1)` and tokenctl itself can tell it from any other database.
 */
export const APPLICATION_ID = 0x746b6374;


/**
 * The schema history. Never edit a migration that has shipped: append a new one, at the end of
 * this list (the shipped ones are kept in migrations/, a few to a file).
 * `PRAGMA user_version` holds the number of the last one applied.
 */
export const MIGRATIONS: readonly Migration[] = [
  ...MIGRATIONS_1_TO_3,
  ...MIGRATIONS_4_TO_5,
  ...MIGRATIONS_6_TO_9,
  {
    // DPoP authorization code binding (RFC 9449 §10): the thumbprint of the key the request's
    // dpop_jkt names, which the code's exchange must prove; null for a request without one.
    version: 10,
    name: 'DPoP: authorization code binding (dpop_jkt)',
    sql: `
      ALTER TABLE authorizations ADD COLUMN dpop_jkt TEXT;
    `,
  },
  MIGRATION_11_STREAM_PAUSED,
];

export const LATEST_SCHEMA_VERSION = Math.max(...MIGRATIONS.map((m) => m.version));

/**
 * Tells what the open file is, reading only, so that a file that is not ours is left untouched.
 * Returns the schema version of a tokenctl store, or 0 for an empty database (ready to be
 * initialised). Throws {@link NotAStoreError} for another application's database and
 * {@link SchemaTooNewError} for a store written by a newer tokenctl.
 */
export function identify(db: Database.Database, location: string): number {
  // One read transaction, so the three reads see one moment: read one by one, a migration
  // committed by another process in between looked like tables without our marker, that is,
  // "another application's database".
  const { appId, version, objects } = db.transaction(() => ({
    appId: db.pragma('application_id', { simple: true }) as number,
    version: db.pragma('user_version', { simple: true }) as number,
    objects: (db.prepare('SELECT count(*) AS n FROM sqlite_schema').get() as { n: number }).n,
  }))();
  if (appId === APPLICATION_ID) {
    if (version > LATEST_SCHEMA_VERSION) throw new SchemaTooNewError(location, version, LATEST_SCHEMA_VERSION);
    return version;
  }
  if (appId !== 0) {
    throw new NotAStoreError(location, `it is an SQLite database of another application (application id 0x${(appId >>> 0).toString(16)})`);
  }
  if (objects > 0 || version !== 0) throw new NotAStoreError(location, 'it is an SQLite database of another application');
  return 0;
}

/**
 * Brings the schema up to {@link LATEST_SCHEMA_VERSION} in one BEGIN IMMEDIATE transaction:
 * either every pending migration is applied and recorded, or none is. The version is read again
 * under the write lock, so when two processes open a new file at once, the second one waits
 * (busy timeout), then finds the work done and applies nothing.
 */
export function migrate(db: Database.Database, location: string, now: number = Date.now()): void {
  const apply = db.transaction(() => {
    const current = identify(db, location);
    if (current === LATEST_SCHEMA_VERSION) return;
    const record = () => db.prepare('INSERT INTO migrations (version, name, applied_at) VALUES (?, ?, ?)');
    for (const m of MIGRATIONS) {
      if (m.version <= current) continue;
      db.exec(m.sql);
      record().run(m.version, m.name, now);
    }
    // Header fields are written through the pager: they commit or roll back with the schema.
    db.pragma(`application_id = ${APPLICATION_ID}`);
    db.pragma(`user_version = ${LATEST_SCHEMA_VERSION}`);
  });
  apply.immediate();
}
