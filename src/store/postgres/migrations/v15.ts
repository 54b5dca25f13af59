import type { Migration } from './migration.js';

/**
 * SSF 1.0 §8.1.2: whether a receiver's stream is paused, as a column the push claim reads
 * (outbox-store.ts CLAIM) instead of a match on the JSON's text. Generated from the stream's JSON
 * (STORED, the only kind PostgreSQL has), so that a node that writes only the JSON keeps it right.
 * PostgreSQL's JSON types refuse the escape \u0000, which JSON.stringify writes for a NUL a
 * receiver put in a description or a `state`: it is read as \ufffd, changing nothing else (the
 * backslashes before it stay as they were; chr(92) is a backslash, whatever the string settings).
 * The stream is JSON the engine wrote or null; the cast refuses a write of anything else.
 */
export const MIGRATION_15_STREAM_PAUSED: Migration = {
  version: 15,
  name: 'ssf streams: receivers.paused, generated from the stream settings',
  // A generated column: older nodes neither name nor write it, and it follows what they write.
  change: 'expand',
  sql: `
    ALTER TABLE receivers ADD COLUMN paused BOOLEAN
      GENERATED ALWAYS AS (coalesce((replace(stream, chr(92) || 'u0000', chr(92) || 'ufffd')::jsonb ->> 'status') = 'paused', false)) STORED;
  `,
};
