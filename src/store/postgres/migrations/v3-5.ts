import { BEFORE_ROLLING_UPGRADES, type Migration } from './migration.js';

/** Migrations 3 to 5 of the schema history (migrations.ts): shipped, so never edited. */
export const MIGRATIONS_3_TO_5: readonly Migration[] = [
  {
    // One row per grant: the row that minting (FOR SHARE) and revoking (an UPDATE, first) lock, so
    // that a revocation of a grant, a user or a client is final on every node ("a revocation is
    // final", contract 3): under READ COMMITTED, a revocation that waited for a mint's lock revokes,
    // in its next statement, what that mint inserted; a mint that waited for a revocation finds
    // the grant revoked. Existing grants start unrevoked: their tokens keep their own states.
    version: 3,
    name: 'grants: the lock of minting and revoking',
    change: BEFORE_ROLLING_UPGRADES(3),
    sql: `
      CREATE TABLE grants (
        grant_id   TEXT PRIMARY KEY,
        client_id  TEXT NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
        username   TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        revoked_at BIGINT
      );
      INSERT INTO grants (grant_id, client_id, username, created_at)
        SELECT grant_id, min(client_id), min(username), min(issued_at) FROM tokens GROUP BY grant_id;
      -- Bulk revocation by user (and user+client) or client, and the foreign key.
      CREATE INDEX grants_user ON grants (username, client_id);
      CREATE INDEX grants_client ON grants (client_id);
      -- The grant index also orders a grant's tokens by issue time: the tokens a grant minted in the
      -- last minute are counted from the index (the limit on refreshes per grant).
      DROP INDEX IF EXISTS tokens_grant;
      CREATE INDEX tokens_grant ON tokens (grant_id, issued_at);
    `,
  },
  {
    // Revocation as a HOT update (no index touched): no index may cover revoked_at, and the page
    // must have room for the row's new version. A token changes once or twice in its life
    // (revoked, replaced), so half of each new page is left free for that: a bulk revocation of
    // every token on a page stays on the page (10x fewer buffers than with seven index inserts
    // per token). Purge finds revoked tokens by a resumable scan instead (statements.ts). Grants
    // the same, and their bulk order comes from (client_id | username, grant_id), read in order
    // and resumed, never sorted. Existing rows keep their pages until rewritten (VACUUM FULL).
    version: 4,
    name: 'revocations as HOT updates: no revoked_at index, room on each page, ordered grant indexes',
    change: BEFORE_ROLLING_UPGRADES(4),
    sql: `
      DROP INDEX IF EXISTS tokens_revoked;
      ALTER TABLE tokens SET (fillfactor = 50);
      ALTER TABLE grants SET (fillfactor = 50);
      DROP INDEX IF EXISTS grants_user;
      DROP INDEX IF EXISTS grants_client;
      CREATE INDEX grants_user ON grants (username, grant_id);
      CREATE INDEX grants_client ON grants (client_id, grant_id);
    `,
  },
  {
    // Security events (docs/events.md): the outbox every revocation writes to in its own transaction
    // (outbox-store.ts, event-writes.ts), the receivers it is delivered to, and the keys SETs are signed with.
    // No foreign keys between the outbox tables: a check per delivery would lock the receiver's row
    // in every revocation (a multixact under load); deleteReceiver and the revocations exclude
    // each other by a table lock instead (event-writes.ts), so no delivery is left without its receiver.
    version: 5,
    name: 'security events: receivers and their leases, the outbox and its deliveries, signing keys',
    change: BEFORE_ROLLING_UPGRADES(5),
    sql: `
      -- What the operator registered: written only by receiver add and delete. Every revocation
      -- reads it, so nothing that changes often lives here (at SERIALIZABLE, a write to a table a
      -- revocation read would make deliverers and revocations fail each other).
      CREATE TABLE receivers (
        id           TEXT PRIMARY KEY,
        delivery     TEXT NOT NULL CHECK (delivery IN ('push', 'poll')),
        endpoint_url TEXT,
        auth_header  TEXT,
        ca_pem       TEXT,
        client_id    TEXT,
        audience     TEXT NOT NULL,
        created_at   BIGINT NOT NULL
      );

      -- How each receiver's delivery goes: its lease (the push deliverer holding it, until
      -- lease_until in ms; NULL and 0: nobody) and its last outcomes. One row per receiver.
      CREATE TABLE receiver_leases (
        receiver_id       TEXT PRIMARY KEY,
        lease_owner       TEXT,
        lease_until       BIGINT NOT NULL DEFAULT 0,
        last_error        TEXT,
        last_delivered_at BIGINT
      );

      -- seq orders the events (the order of their inserts); the payload is the RevocationEvent.
      CREATE TABLE security_events (
        seq     BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id      TEXT NOT NULL UNIQUE,
        at      BIGINT NOT NULL,
        payload JSONB NOT NULL
      );

      -- One row per event and receiver until it is delivered (push) or acknowledged (poll), then deleted.
      CREATE TABLE event_deliveries (
        receiver_id     TEXT NOT NULL,
        event_seq       BIGINT NOT NULL,
        state           TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'dead')),
        attempts        INTEGER NOT NULL DEFAULT 0,
        next_attempt_at BIGINT NOT NULL,
        last_error      TEXT,
        PRIMARY KEY (receiver_id, event_seq)
      );
      -- purgeDeliveredEvents: is an event still referred to?
      CREATE INDEX event_deliveries_event ON event_deliveries (event_seq);

      CREATE TABLE signing_keys (
        kid         TEXT PRIMARY KEY,
        alg         TEXT NOT NULL,
        private_jwk TEXT NOT NULL,
        public_jwk  TEXT NOT NULL,
        created_at  BIGINT NOT NULL,
        retired_at  BIGINT
      );
      -- One current key at most, whatever races.
      CREATE UNIQUE INDEX signing_keys_current ON signing_keys ((retired_at IS NULL)) WHERE retired_at IS NULL;
    `,
  },
];
