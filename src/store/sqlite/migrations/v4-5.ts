import type { Migration } from './migration.js';

/** Migrations 4 to 5 of the schema history (migrations.ts): shipped, so never edited. */
export const MIGRATIONS_4_TO_5: readonly Migration[] = [
  {
    // Security events (docs/events.md, store/event-records.ts): the receivers, the outbox a revocation writes in
    // its own transaction (one event, one delivery per receiver, nothing without receivers), and
    // the keys the events are signed with. IF NOT EXISTS, as 2 and 3 are: applying it twice is harmless.
    version: 4,
    name: 'security events: receivers, outbox, signing keys',
    sql: `
      -- A push receiver is leased to one deliverer at a time: lease_owner until lease_until (ms).
      CREATE TABLE IF NOT EXISTS receivers (
        id                TEXT PRIMARY KEY,
        delivery          TEXT NOT NULL CHECK (delivery IN ('push', 'poll')),
        endpoint_url      TEXT,
        authorization     TEXT,
        ca_pem            TEXT,
        client_id         TEXT,
        audience          TEXT NOT NULL,
        created_at        INTEGER NOT NULL,
        lease_owner       TEXT,
        lease_until       INTEGER NOT NULL DEFAULT 0,
        last_error        TEXT,
        last_delivered_at INTEGER
      ) STRICT;
      CREATE INDEX IF NOT EXISTS receivers_poll_client ON receivers (client_id) WHERE delivery = 'poll';

      -- seq: the order of the commits (writers take turns on the file). payload: the RevocationEvent,
      -- JSON. refs: how many deliveries refer to it (kept by the trigger below), so that finding the
      -- events to purge is one look at a partial index, and a revocation writes no index for it.
      CREATE TABLE IF NOT EXISTS security_events (
        seq     INTEGER PRIMARY KEY,
        id      TEXT NOT NULL UNIQUE,
        at      INTEGER NOT NULL,
        payload TEXT NOT NULL,
        refs    INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX IF NOT EXISTS security_events_delivered ON security_events (seq) WHERE refs = 0;

      -- One row per event due to a receiver, until it is delivered or acknowledged; 'dead': given up on.
      CREATE TABLE IF NOT EXISTS event_deliveries (
        receiver_id     TEXT NOT NULL REFERENCES receivers (id) ON DELETE CASCADE,
        event_seq       INTEGER NOT NULL,
        state           TEXT NOT NULL CHECK (state IN ('pending', 'dead')),
        attempts        INTEGER NOT NULL,
        next_attempt_at INTEGER NOT NULL,
        last_error      TEXT,
        PRIMARY KEY (receiver_id, event_seq)
      ) STRICT, WITHOUT ROWID;
      -- However a delivery goes (delivered, acknowledged, its receiver removed), its event has one less.
      CREATE TRIGGER IF NOT EXISTS event_deliveries_gone AFTER DELETE ON event_deliveries BEGIN
        UPDATE security_events SET refs = refs - 1 WHERE seq = OLD.event_seq;
      END;

      CREATE TABLE IF NOT EXISTS signing_keys (
        kid         TEXT PRIMARY KEY,
        alg         TEXT NOT NULL,
        private_jwk TEXT NOT NULL,
        public_jwk  TEXT NOT NULL,
        created_at  INTEGER NOT NULL,
        retired_at  INTEGER
      ) STRICT;
      -- At most one current key, whoever adds it.
      CREATE UNIQUE INDEX IF NOT EXISTS signing_keys_current ON signing_keys ((retired_at IS NULL)) WHERE retired_at IS NULL;
    `,
  },
  {
    // What an outbox row costs a commit (the bench's events_cost_ratio): every
    // page a commit changes is one more WAL frame to write, sync and checkpoint.
    // - A poll receiver gets a cursor (acked_through: every outbox row up to it acknowledged) and
    //   poll_acks (rows after it acknowledged out of order) instead of a delivery row per commit.
    //   Its pending rows become marks; a row nobody had is marked acknowledged.
    // - No index by id: an acknowledgement's rows are looked for after the receiver's cursor, a
    //   settlement's among the push receiver's pending deliveries (sqlite/outbox-store.ts).
    // - No count of deliveries per row (refs, kept by a trigger that rewrote the row's page at every
    //   acknowledgement): the purge goes by the receivers' cursors and oldest pending deliveries.
    version: 5,
    name: 'security events: a cursor per poll receiver, no index by id, no count per event',
    sql: `
      -- First what no delivery refers to any more (the purge's work, which could fall behind under
      -- load): the table is copied below, and then holds only what receivers still wait for.
      DELETE FROM security_events WHERE refs = 0;
      DROP TRIGGER IF EXISTS event_deliveries_gone;
      DROP INDEX IF EXISTS security_events_delivered;
      CREATE TABLE security_events_v5 (
        seq     INTEGER PRIMARY KEY,
        id      TEXT NOT NULL,
        at      INTEGER NOT NULL,
        payload TEXT NOT NULL
      ) STRICT;
      INSERT INTO security_events_v5 (seq, id, at, payload) SELECT seq, id, at, payload FROM security_events;
      DROP TABLE security_events;
      ALTER TABLE security_events_v5 RENAME TO security_events;

      ALTER TABLE receivers ADD COLUMN acked_through INTEGER NOT NULL DEFAULT 0;
      CREATE TABLE poll_acks (
        receiver_id TEXT NOT NULL REFERENCES receivers (id) ON DELETE CASCADE,
        event_seq   INTEGER NOT NULL,
        PRIMARY KEY (receiver_id, event_seq)
      ) STRICT, WITHOUT ROWID;
      UPDATE receivers SET acked_through = coalesce(
          (SELECT min(d.event_seq) - 1 FROM event_deliveries d WHERE d.receiver_id = receivers.id),
          (SELECT max(seq) FROM security_events), 0)
        WHERE delivery = 'poll';
      INSERT INTO poll_acks (receiver_id, event_seq)
        SELECT r.id, e.seq FROM receivers r JOIN security_events e ON e.seq > r.acked_through
        WHERE r.delivery = 'poll'
          AND NOT EXISTS (SELECT 1 FROM event_deliveries d WHERE d.receiver_id = r.id AND d.event_seq = e.seq);
      DELETE FROM event_deliveries WHERE receiver_id IN (SELECT id FROM receivers WHERE delivery = 'poll');
      CREATE INDEX event_deliveries_dead ON event_deliveries (event_seq) WHERE state = 'dead';
    `,
  },
];
