import type { Migration } from './migration.js';

/**
 * Room on each page for a revocation as a HOT update (migration 4) back at 50 %: a bulk revocation
 * revokes every token on a page, and at 70 only the first ~42 % of their new versions fit
 * (30 % free ÷ 70 % used), so the rest wrote every index of the table; the revocation of 100,000
 * tokens took 2.9-4.1 s at 70 against 0.76-1.04 s at 50, measured on one machine
 * (docs/decisions.md). New pages only, as before: rows already written keep theirs.
 */
export const MIGRATION_16_FILLFACTOR_50: Migration = {
  version: 16,
  name: 'tokens and grants: fillfactor 50 again',
  // A storage parameter: older nodes read and write the tables as before.
  change: 'expand',
  sql: `
    ALTER TABLE tokens SET (fillfactor = 50);
    ALTER TABLE grants SET (fillfactor = 50);
  `,
};
