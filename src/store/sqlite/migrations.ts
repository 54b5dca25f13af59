import type Database from 'better-sqlite3';
import { NotAStoreError, SchemaTooNewError } from '../store.js';

/**
 * Marks a file as a tokenctl store in the SQLite header (`PRAGMA application_id`, the ASCII
 * bytes "tkct"), so that `file(1)` and tokenctl itself can tell it from any other database.
 */
export const APPLICATION_ID = 0x746b6374;

/** One numbered schema change. Applied once, in order, and recorded in the `migrations` table. */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

/**
 * The schema history. Never edit a migration that has shipped: append a new one.
 * `PRAGMA user_version` holds the number of the last one applied.
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'clients, tokens, audit',
    sql: `
      CREATE TABLE migrations (
        version    INTEGER PRIMARY KEY,
        name       TEXT NOT NULL,
        applied_at INTEGER NOT NULL
      ) STRICT;

      CREATE TABLE clients (
        id                TEXT PRIMARY KEY,
        name              TEXT NOT NULL,
        secret_hash       TEXT,
        scope             TEXT NOT NULL,
        org_id            TEXT NOT NULL,
        audience          TEXT NOT NULL,
        access_ttl_ms     INTEGER,
        refresh_ttl_ms    INTEGER,
        created_at        INTEGER NOT NULL,
        secret_updated_at INTEGER NOT NULL
      ) STRICT;

      -- Only the digest of a token is stored (contract 2). Deleting a client deletes its tokens.
      CREATE TABLE tokens (
        jti         TEXT PRIMARY KEY,
        digest      TEXT NOT NULL UNIQUE,
        type        TEXT NOT NULL CHECK (type IN ('access_token', 'refresh_token')),
        grant_id    TEXT NOT NULL,
        client_id   TEXT NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
        username    TEXT NOT NULL,
        sub         TEXT NOT NULL,
        scope       TEXT NOT NULL,
        audience    TEXT NOT NULL,
        org_id      TEXT NOT NULL,
        node        TEXT NOT NULL,
        issued_at   INTEGER NOT NULL,
        not_before  INTEGER NOT NULL,
        expires_at  INTEGER NOT NULL,
        revoked_at  INTEGER,
        replaced_at INTEGER,
        replaced_by TEXT
      ) STRICT;
      -- Grant cascades, bulk revocation by user (and user+client) or client, the foreign key.
      CREATE INDEX tokens_grant ON tokens (grant_id);
      CREATE INDEX tokens_user ON tokens (username, client_id);
      CREATE INDEX tokens_client ON tokens (client_id);
      -- purgeBatch and stats: expired tokens, and revoked ones (most tokens never are, hence partial).
      CREATE INDEX tokens_expires ON tokens (expires_at);
      CREATE INDEX tokens_revoked ON tokens (revoked_at) WHERE revoked_at IS NOT NULL;

      CREATE TABLE audit (
        id     INTEGER PRIMARY KEY AUTOINCREMENT,
        at     INTEGER NOT NULL,
        actor  TEXT NOT NULL,
        action TEXT NOT NULL,
        target TEXT NOT NULL,
        count  INTEGER NOT NULL,
        detail TEXT NOT NULL
      ) STRICT;
      CREATE INDEX audit_target ON audit (target);
    `,
  },
  {
    // No query can use it (the audit filters match words inside the target), and every
    // revocation paid for it: one more scattered page in its commit (~35% of its store work).
    version: 2,
    name: 'drop the unused audit_target index',
    sql: 'DROP INDEX IF EXISTS audit_target;',
  },
  {
    // The grant index also orders a grant's tokens by issue time, so that the access tokens a grant
    // minted in the last minute are counted from the index alone (the limit on refreshes per grant).
    version: 3,
    name: 'grant index by issue time',
    sql: 'DROP INDEX IF EXISTS tokens_grant; CREATE INDEX tokens_grant ON tokens (grant_id, issued_at);',
  },
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
  {
    // The authorization code flow (contract 5, store/authorization-records.ts). Clients get their
    // redirect URIs and grant types as space-separated words (neither a URI nor a grant type holds
    // a space); a client of before keeps the refresh grant only. A request lives and dies with its
    // client, and every secret of it is a digest looked up by its own unique index.
    version: 6,
    name: 'authorization code flow: client grant settings, authorization requests',
    sql: `
      ALTER TABLE clients ADD COLUMN redirect_uris TEXT NOT NULL DEFAULT '';
      ALTER TABLE clients ADD COLUMN grant_types TEXT NOT NULL DEFAULT 'refresh_token';
      ALTER TABLE clients ADD COLUMN login_provider INTEGER NOT NULL DEFAULT 0 CHECK (login_provider IN (0, 1));

      CREATE TABLE authorizations (
        id                TEXT PRIMARY KEY,
        challenge_digest  TEXT NOT NULL UNIQUE,
        browser_digest    TEXT NOT NULL,
        client_id         TEXT NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
        redirect_uri      TEXT NOT NULL,
        redirect_uri_sent INTEGER NOT NULL CHECK (redirect_uri_sent IN (0, 1)),
        scope             TEXT NOT NULL,
        state             TEXT,
        code_challenge    TEXT NOT NULL,
        created_at        INTEGER NOT NULL,
        expires_at        INTEGER NOT NULL,
        status            TEXT NOT NULL CHECK (status IN ('pending', 'accepted', 'rejected')),
        decided_at        INTEGER,
        verifier_digest   TEXT UNIQUE,
        subject           TEXT,
        username          TEXT,
        granted_scope     TEXT,
        error             TEXT,
        error_description TEXT,
        code_digest       TEXT UNIQUE,
        code_expires_at   INTEGER,
        grant_id          TEXT,
        redeemed_at       INTEGER
      ) STRICT;
      -- The foreign key (deleting a client), and the purge: when a request ended (authorizations.ts).
      CREATE INDEX authorizations_client ON authorizations (client_id);
      CREATE INDEX authorizations_ended ON authorizations (max(expires_at, coalesce(code_expires_at, 0)));
    `,
  },
  {
    // SSF streams (engine/streams.ts): a receiver's stream settings as JSON (null: an operator's
    // receiver with the defaults); and one current signing key per algorithm (ES256, RS256), not one in all.
    version: 7,
    name: 'ssf streams: receiver stream settings, a current signing key per algorithm',
    sql: `
      ALTER TABLE receivers ADD COLUMN stream TEXT;
      DROP INDEX IF EXISTS signing_keys_current;
      CREATE UNIQUE INDEX signing_keys_current ON signing_keys (alg) WHERE retired_at IS NULL;
    `,
  },
  {
    // DPoP (RFC 9449, contract 8): the thumbprint a token is bound to (null: a bearer token), the
    // clients that must send proofs, and the proofs seen, shared by every process on the file so
    // that a replay to another worker is refused too. A proof is kept by a fixed-size digest
    // until its iat window has passed (ports/dpop-proofs.ts); the index serves the deletion.
    version: 8,
    name: 'DPoP: token binding, clients that require it, proofs seen',
    sql: `
      ALTER TABLE tokens ADD COLUMN jkt TEXT;
      ALTER TABLE clients ADD COLUMN require_dpop INTEGER NOT NULL DEFAULT 0 CHECK (require_dpop IN (0, 1));
      CREATE TABLE dpop_proofs (
        key   TEXT PRIMARY KEY,
        until INTEGER NOT NULL
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX dpop_proofs_until ON dpop_proofs (until);
    `,
  },
  {
    // The bounded outbox (docs/events.md): a receiver's pending deliveries become dead letters
    // once their event is older than its retention, applied by serve's housekeeping. A receiver
    // of before gets the default, 24 hours.
    version: 9,
    name: 'security events: a retention per receiver',
    sql: `
      ALTER TABLE receivers ADD COLUMN retention_ms INTEGER NOT NULL DEFAULT 86400000;
    `,
  },
  {
    // DPoP authorization code binding (RFC 9449 §10): the thumbprint of the key the request's
    // dpop_jkt names, which the code's exchange must prove; null for a request without one.
    version: 10,
    name: 'DPoP: authorization code binding (dpop_jkt)',
    sql: `
      ALTER TABLE authorizations ADD COLUMN dpop_jkt TEXT;
    `,
  },
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
