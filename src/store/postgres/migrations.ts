import type { ClientBase } from 'pg';
import { NotAStoreError, SchemaTooNewError } from '../store.js';

/** One numbered schema change. Applied once, in order, and recorded in the `migrations` table. */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

/**
 * The table whose presence marks a schema as a tokenctl store (the SQLite store's
 * `application_id`): `application = tokenctl`, and `schema_version`, the last migration applied.
 */
export const META_TABLE = 'tokenctl_meta';
export const APPLICATION = 'tokenctl';

/** Tables tokenctl creates: finding one of them without {@link META_TABLE} means another application's. */
const OWN_TABLES = ['migrations', 'clients', 'tokens', 'audit', 'grants', 'receivers', 'receiver_leases', 'security_events', 'event_deliveries', 'signing_keys', 'authorizations'];

/**
 * The schema history, the same shape as the SQLite store's. Never edit a migration that has
 * shipped: append a new one. Names are unqualified: migrate() runs them with the store's schema
 * as the transaction's search_path. Times are BIGINT milliseconds.
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'clients, tokens, audit',
    sql: `
      CREATE TABLE ${META_TABLE} (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
      );
      INSERT INTO ${META_TABLE} (key, value) VALUES ('application', '${APPLICATION}');

      CREATE TABLE migrations (
        version    INTEGER PRIMARY KEY,
        name       TEXT NOT NULL,
        applied_at BIGINT NOT NULL
      );

      CREATE TABLE clients (
        id                TEXT PRIMARY KEY,
        name              TEXT NOT NULL,
        secret_hash       TEXT,
        scope             TEXT NOT NULL,
        org_id            TEXT NOT NULL,
        audience          TEXT NOT NULL,
        access_ttl_ms     BIGINT,
        refresh_ttl_ms    BIGINT,
        created_at        BIGINT NOT NULL,
        secret_updated_at BIGINT NOT NULL
      );

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
        issued_at   BIGINT NOT NULL,
        not_before  BIGINT NOT NULL,
        expires_at  BIGINT NOT NULL,
        revoked_at  BIGINT,
        replaced_at BIGINT,
        replaced_by TEXT
      );
      -- Grant cascades, bulk revocation by user (and user+client) or client, the foreign key.
      CREATE INDEX tokens_grant ON tokens (grant_id);
      CREATE INDEX tokens_user ON tokens (username, client_id);
      CREATE INDEX tokens_client ON tokens (client_id);
      -- purgeBatch and stats: expired tokens, and revoked ones (most tokens never are, hence partial).
      CREATE INDEX tokens_expires ON tokens (expires_at);
      CREATE INDEX tokens_revoked ON tokens (revoked_at) WHERE revoked_at IS NOT NULL;

      CREATE TABLE audit (
        id     BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        at     BIGINT NOT NULL,
        actor  TEXT NOT NULL,
        action TEXT NOT NULL,
        target TEXT NOT NULL,
        count  BIGINT NOT NULL,
        detail TEXT NOT NULL
      );
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
    // One row per grant: the row that minting (FOR SHARE) and revoking (an UPDATE, first) lock, so
    // that a revocation of a grant, a user or a client is final on every node ("a revocation is
    // final", contract 3): under READ COMMITTED, a revocation that waited for a mint's lock revokes,
    // in its next statement, what that mint inserted; a mint that waited for a revocation finds
    // the grant revoked. Existing grants start unrevoked: their tokens keep their own states.
    version: 3,
    name: 'grants: the lock of minting and revoking',
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
  {
    // Every token inserted (each refresh mints one, each rotation two) had its foreign key to
    // `clients` checked, which takes a share lock on the client's row (FOR KEY SHARE): under load
    // nearly every token is of one client, and the concurrent inserts made that row a multixact
    // that each of them rewrote. Tokens live and die with their grant, which keeps its foreign key
    // to the client (checked once per login); deleteClient deletes the client's tokens itself, in
    // the statement that deletes the client, after taking its grants' locks, which every mint
    // and rotation of those grants holds while it inserts (docs/scale-out.md).
    version: 6,
    name: "tokens without a foreign key to clients: no lock on the client's row per token inserted",
    sql: `ALTER TABLE tokens DROP CONSTRAINT IF EXISTS tokens_client_id_fkey;`,
  },
  {
    // The reads of introspection and refresh, batched per event-loop turn, as a function: its
    // statement is planned once per database connection and kept (PL/pgSQL caches its plans),
    // where the same statement sent by the client is parsed, analysed and planned on every call,
    // which was most of the database's work per batch. No prepared statement and no session
    // state: it works through PgBouncer in transaction mode as directly. Its tables are the
    // schema's (search_path of the function, set from this migration's). The columns are those
    // of the records (statements.ts): a change to them needs a new version of this function.
    version: 7,
    name: 'find_clients_and_tokens: the batched read as a function, planned once per connection',
    sql: `
      CREATE FUNCTION find_clients_and_tokens(p_client_ids TEXT[], p_digests TEXT[])
        RETURNS TABLE (r_clients JSON, r_tokens JSON)
        LANGUAGE plpgsql STABLE SET search_path FROM CURRENT
        AS $fn$
      BEGIN
        RETURN QUERY
          WITH q AS (SELECT * FROM unnest(p_client_ids, p_digests) WITH ORDINALITY AS q (client_id, digest, i))
          SELECT
            (SELECT json_object_agg(c.id, c) FROM (
              SELECT id, name, secret_hash AS "secretHash", scope, org_id AS "orgId", audience, access_ttl_ms AS "accessTtlMs",
                refresh_ttl_ms AS "refreshTtlMs", created_at AS "createdAt", secret_updated_at AS "secretUpdatedAt"
              FROM clients WHERE id IN (SELECT q.client_id FROM q)) c),
            (SELECT json_agg((SELECT row_to_json(t) FROM (
              SELECT jti, digest, type, grant_id AS "grantId", client_id AS "clientId", username, sub, scope, audience,
                org_id AS "orgId", node, issued_at AS "issuedAt", not_before AS "notBefore", expires_at AS "expiresAt",
                revoked_at AS "revokedAt", replaced_at AS "replacedAt", replaced_by AS "replacedBy"
              FROM tokens WHERE tokens.digest = q.digest) t) ORDER BY q.i) FROM q);
      END
      $fn$;
    `,
  },
  {
    // The authorization code flow (contract 5, store/authorization-records.ts). Clients get their
    // redirect URIs, grant types (a client of before keeps the refresh grant only) and login-provider
    // mark; the batched read returns them, so its function is replaced (as migration 7 says). A request
    // lives and dies with its client (one foreign-key check per login, as a grant's), and each secret of
    // it is a digest looked up by its own unique index. Purging goes by when a request ended
    // (authorization-statements.ts ENDED_AT).
    version: 8,
    name: 'authorization code flow: client grant settings, authorization requests',
    sql: `
      ALTER TABLE clients
        ADD COLUMN redirect_uris  TEXT[] NOT NULL DEFAULT '{}',
        ADD COLUMN grant_types    TEXT[] NOT NULL DEFAULT '{refresh_token}',
        ADD COLUMN login_provider BOOLEAN NOT NULL DEFAULT false;

      CREATE TABLE authorizations (
        id                TEXT PRIMARY KEY,
        challenge_digest  TEXT NOT NULL UNIQUE,
        browser_digest    TEXT NOT NULL,
        client_id         TEXT NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
        redirect_uri      TEXT NOT NULL,
        redirect_uri_sent BOOLEAN NOT NULL,
        scope             TEXT NOT NULL,
        state             TEXT,
        code_challenge    TEXT NOT NULL,
        created_at        BIGINT NOT NULL,
        expires_at        BIGINT NOT NULL,
        status            TEXT NOT NULL CHECK (status IN ('pending', 'accepted', 'rejected')),
        decided_at        BIGINT,
        verifier_digest   TEXT UNIQUE,
        subject           TEXT,
        username          TEXT,
        granted_scope     TEXT,
        error             TEXT,
        error_description TEXT,
        code_digest       TEXT UNIQUE,
        code_expires_at   BIGINT,
        grant_id          TEXT,
        redeemed_at       BIGINT
      );
      CREATE INDEX authorizations_client ON authorizations (client_id);
      CREATE INDEX authorizations_ended ON authorizations ((greatest(expires_at, coalesce(code_expires_at, 0))));

      CREATE OR REPLACE FUNCTION find_clients_and_tokens(p_client_ids TEXT[], p_digests TEXT[])
        RETURNS TABLE (r_clients JSON, r_tokens JSON)
        LANGUAGE plpgsql STABLE SET search_path FROM CURRENT
        AS $fn$
      BEGIN
        RETURN QUERY
          WITH q AS (SELECT * FROM unnest(p_client_ids, p_digests) WITH ORDINALITY AS q (client_id, digest, i))
          SELECT
            (SELECT json_object_agg(c.id, c) FROM (
              SELECT id, name, secret_hash AS "secretHash", scope, org_id AS "orgId", audience, access_ttl_ms AS "accessTtlMs",
                refresh_ttl_ms AS "refreshTtlMs", created_at AS "createdAt", secret_updated_at AS "secretUpdatedAt",
                redirect_uris AS "redirectUris", grant_types AS "grantTypes", login_provider AS "loginProvider"
              FROM clients WHERE id IN (SELECT q.client_id FROM q)) c),
            (SELECT json_agg((SELECT row_to_json(t) FROM (
              SELECT jti, digest, type, grant_id AS "grantId", client_id AS "clientId", username, sub, scope, audience,
                org_id AS "orgId", node, issued_at AS "issuedAt", not_before AS "notBefore", expires_at AS "expiresAt",
                revoked_at AS "revokedAt", replaced_at AS "replacedAt", replaced_by AS "replacedBy"
              FROM tokens WHERE tokens.digest = q.digest) t) ORDER BY q.i) FROM q);
      END
      $fn$;
    `,
  },
];

export const LATEST_SCHEMA_VERSION = Math.max(...MIGRATIONS.map((m) => m.version));

/** A double-quoted SQL identifier. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/**
 * Tells what the schema holds, reading only, so that another application's tables stay
 * untouched. Returns the schema version of a tokenctl store, or 0 for a schema without any of
 * tokenctl's tables (or one that does not exist yet). Throws {@link NotAStoreError} when tables
 * named like tokenctl's belong to something else, {@link SchemaTooNewError} for a store written
 * by a newer tokenctl.
 */
export async function identify(db: ClientBase, schema: string, location: string): Promise<number> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relname = ANY($2::text[])`,
    [schema, [META_TABLE, ...OWN_TABLES]],
  );
  const found = rows.map((r) => r.name);
  if (!found.includes(META_TABLE)) {
    const foreign = OWN_TABLES.find((t) => found.includes(t));
    if (foreign !== undefined) {
      throw new NotAStoreError(location, `schema "${schema}" has a table "${foreign}" that tokenctl did not create (no ${META_TABLE} table)`);
    }
    return 0;
  }
  const meta = await db.query<{ key: string; value: string }>(`SELECT key, value FROM ${quoteIdent(schema)}.${META_TABLE}`);
  const value = (key: string) => meta.rows.find((r) => r.key === key)?.value;
  if (value('application') !== APPLICATION) {
    throw new NotAStoreError(location, `schema "${schema}" has a ${META_TABLE} table that does not name tokenctl`);
  }
  const version = Number(value('schema_version') ?? 0);
  if (!Number.isInteger(version) || version < 0) throw new NotAStoreError(location, `schema "${schema}" has an invalid schema version`);
  if (version > LATEST_SCHEMA_VERSION) throw new SchemaTooNewError(location, version, LATEST_SCHEMA_VERSION);
  return version;
}

/**
 * Brings `schema` up to {@link LATEST_SCHEMA_VERSION}. An up-to-date store is recognised with
 * reads only (no lock, no CREATE privilege needed), which is every start but the first.
 * Otherwise one transaction takes a transaction-scoped advisory lock named after the schema,
 * creates the schema if missing, reads the version again under the lock and applies what is
 * pending: when several nodes start at once, the others wait for the lock, then find the work
 * done and apply nothing. Either every pending migration is applied and recorded, or none is.
 */
export async function migrate(db: ClientBase, schema: string, location: string, now: number = Date.now()): Promise<void> {
  if ((await identify(db, schema, location)) === LATEST_SCHEMA_VERSION) return;
  // READ COMMITTED whatever the database's default: the version read again under the lock must
  // see what a node that held the lock before committed (a REPEATABLE READ snapshot would not).
  await db.query('BEGIN ISOLATION LEVEL READ COMMITTED');
  try {
    await db.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`tokenctl migrate ${schema}`]);
    const exists = await db.query('SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1', [schema]);
    if (exists.rowCount === 0) await db.query(`CREATE SCHEMA ${quoteIdent(schema)}`);
    // The migrations' bare names land in the store's schema; SET LOCAL ends with this transaction,
    // so the connection goes back to its pool (or to PgBouncer's) as it came.
    await db.query(`SET LOCAL search_path TO ${quoteIdent(schema)}`);
    const current = await identify(db, schema, location);
    if (current === LATEST_SCHEMA_VERSION) {
      await db.query('COMMIT'); // another node was first
      return;
    }
    for (const m of MIGRATIONS) {
      if (m.version <= current) continue;
      await db.query(m.sql);
      await db.query('INSERT INTO migrations (version, name, applied_at) VALUES ($1, $2, $3)', [m.version, m.name, now]);
    }
    await db.query(
      `INSERT INTO ${META_TABLE} (key, value) VALUES ('schema_version', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
      [String(LATEST_SCHEMA_VERSION)],
    );
    await db.query('COMMIT');
  } catch (error) {
    await db.query('ROLLBACK').catch(() => undefined); // a lost connection rolls back by itself
    throw error;
  }
}
