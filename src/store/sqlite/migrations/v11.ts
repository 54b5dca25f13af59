import type { Migration } from './migration.js';

/**
 * SSF 1.0 §8.1.2: whether a receiver's stream is paused, as a column the push claim reads
 * (outbox-statements.ts DUE_PUSH) instead of a match on the JSON's text. Generated from the
 * stream's JSON, so that a node that writes only the JSON (an older one) keeps it right; VIRTUAL,
 * the only kind ALTER TABLE adds, computed when read. A value that is not JSON is not paused (as
 * event-records.ts isPausedStream has it), never an error that would stop every claim.
 */
export const MIGRATION_11_STREAM_PAUSED: Migration = {
  version: 11,
  name: 'ssf streams: receivers.paused, generated from the stream settings',
  sql: `
    ALTER TABLE receivers ADD COLUMN paused INTEGER
      GENERATED ALWAYS AS (CASE WHEN json_valid(stream) THEN coalesce(json_extract(stream, '$.status') = 'paused', 0) ELSE 0 END) VIRTUAL;
  `,
};
