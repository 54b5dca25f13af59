import type { Migration } from './migrations/migration.js';
import { MIGRATIONS_1_TO_2 } from './migrations/v1-2.js';
import { MIGRATIONS_3_TO_5 } from './migrations/v3-5.js';
import { MIGRATIONS_6_TO_8 } from './migrations/v6-8.js';
import { MIGRATIONS_9_TO_13 } from './migrations/v9-13.js';
import { MIGRATION_15_STREAM_PAUSED } from './migrations/v15.js';
import { MIGRATION_16_FILLFACTOR_50 } from './migrations/v16.js';

export { APPLICATION, BEFORE_ROLLING_UPGRADES, META_TABLE, type Migration } from './migrations/migration.js';

/** Tables tokenctl creates: finding one of them without {@link META_TABLE} means another application's. */
export const OWN_TABLES = ['migrations', 'clients', 'tokens', 'audit', 'grants', 'receivers', 'receiver_leases', 'security_events', 'event_deliveries', 'signing_keys', 'authorizations'];

/**
 * The schema history, the same shape as the SQLite store's. Never edit a migration that has
 * shipped: append a new one, at the end of this list (the shipped ones are kept in migrations/,
 * a few to a file). Names are unqualified: migrate() runs them with the store's schema
 * as the transaction's search_path. Times are BIGINT milliseconds.
 */
export const MIGRATIONS: readonly Migration[] = [
  ...MIGRATIONS_1_TO_2,
  ...MIGRATIONS_3_TO_5,
  ...MIGRATIONS_6_TO_8,
  ...MIGRATIONS_9_TO_13,
  {
    // DPoP authorization code binding (RFC 9449 §10): the thumbprint of the key the request's
    // dpop_jkt names, which the code's exchange must prove; null for a request without one.
    version: 14,
    name: 'DPoP: authorization code binding (dpop_jkt)',
    // A nullable column: an older node writes null (a code not bound) and ignores it on exchange.
    change: 'expand',
    sql: `
      ALTER TABLE authorizations ADD COLUMN dpop_jkt TEXT;
    `,
  },
  MIGRATION_15_STREAM_PAUSED,
  MIGRATION_16_FILLFACTOR_50,
];

export const LATEST_SCHEMA_VERSION = Math.max(...MIGRATIONS.map((m) => m.version));

/** A double-quoted SQL identifier. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
