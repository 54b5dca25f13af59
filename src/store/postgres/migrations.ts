/**
 * One numbered schema change. Applied once, in order, and recorded in the `migrations` table.
 *
 * Every change says whether a node of an older release still runs on the schema it leaves
 * (rolling upgrades, docs/scale-out.md): `'expand'` adds only what older nodes do not see (a
 * table, a nullable column or one with a default, an index, a function they do not call), so
 * `tokenctl migrate` may apply it while they serve; a contract step removes or changes what
 * older nodes use, and names the oldest schema version whose nodes run on it (`{ contract:
 * { nodesFrom: N } }`: N is the release that stopped using what it removes). A node refuses a
 * store whose contract steps need a newer node than itself (schema.ts).
 */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
  readonly change: 'expand' | { readonly contract: { readonly nodesFrom: number } };
}

/**
 * The steps made before nodes read the `change` of a step: a node of those releases runs only on
 * a store whose `schema_version` is exactly its own newest version, so each of them counts as a
 * contract step that needs its own version.
 */
const BEFORE_ROLLING_UPGRADES = (version: number) => ({ contract: { nodesFrom: version } }) as const;

/**
 * The table whose presence marks a schema as a tokenctl store (the SQLite store's
 * `application_id`): `application = tokenctl`, and `schema_version`, the last migration applied.
 */
export const META_TABLE = 'tokenctl_meta';
export const APPLICATION = 'tokenctl';

/** Tables tokenctl creates: finding one of them without {@link META_TABLE} means another application's. */
export const OWN_TABLES = ['migrations', 'clients', 'tokens', 'audit', 'grants', 'receivers', 'receiver_leases', 'security_events', 'event_deliveries', 'signing_keys', 'authorizations'];

/**
 * The schema history, the same shape as the SQLite store's. Never edit a migration that has
 * shipped: append a new one. Names are unqualified: migrate() runs them with the store's schema
 * as the transaction's search_path. Times are BIGINT milliseconds.
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'clients, tokens, audit',
    change: BEFORE_ROLLING_UPGRADES(1),
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
    change: BEFORE_ROLLING_UPGRADES(2),
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
    change: BEFORE_ROLLING_UPGRADES(6),
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
    change: BEFORE_ROLLING_UPGRADES(7),
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
    change: BEFORE_ROLLING_UPGRADES(8),
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
  {
    // Which steps were expand and which contract, kept beside each (rolling upgrades,
    // docs/scale-out.md): the code that wrote a store may be gone when an operator reads it. Older
    // nodes never write this table on a store they are up to date with; its default covers them.
    version: 9,
    name: 'migrations.change: whether each step was expand or contract',
    change: 'expand',
    sql: `ALTER TABLE migrations ADD COLUMN change TEXT NOT NULL DEFAULT 'contract';`,
  },
  {
    // SSF streams (engine/streams.ts): a receiver's stream settings as JSON (null: an operator's
    // receiver with the defaults); and one current signing key per algorithm (ES256, RS256), not one in all.
    version: 10,
    name: 'ssf streams: receiver stream settings, a current signing key per algorithm',
    // An older node reads "the" current key and retires every current one on rotation: with two
    // (ES256 and RS256) it could sign with the wrong one, so it must not run on this schema.
    change: { contract: { nodesFrom: 10 } },
    sql: `
      ALTER TABLE receivers ADD COLUMN stream TEXT;
      DROP INDEX IF EXISTS signing_keys_current;
      CREATE UNIQUE INDEX signing_keys_current ON signing_keys (alg) WHERE retired_at IS NULL;
    `,
  },
  {
    // DPoP (RFC 9449, contract 8): the thumbprint a token is bound to (null: a bearer token), the
    // clients that must send proofs, and the proofs seen, shared by every node, so that a proof
    // replayed to another node is refused too (ports/dpop-proofs.ts). The batched read returns the
    // two new columns, so its function is replaced (as migration 7 says).
    version: 11,
    name: 'DPoP: token binding, clients that require it, proofs seen',
    // Older nodes ignore the binding (they issue bearer tokens and do not check proofs): docs/dpop.md.
    change: 'expand',
    sql: `
      ALTER TABLE tokens ADD COLUMN jkt TEXT;
      ALTER TABLE clients ADD COLUMN require_dpop BOOLEAN NOT NULL DEFAULT false;
      CREATE TABLE dpop_proofs (
        key   TEXT PRIMARY KEY,
        until BIGINT NOT NULL
      );
      CREATE INDEX dpop_proofs_until ON dpop_proofs (until);

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
                redirect_uris AS "redirectUris", grant_types AS "grantTypes", login_provider AS "loginProvider",
                require_dpop AS "requireDpop"
              FROM clients WHERE id IN (SELECT q.client_id FROM q)) c),
            (SELECT json_agg((SELECT row_to_json(t) FROM (
              SELECT jti, digest, type, grant_id AS "grantId", client_id AS "clientId", username, sub, scope, audience,
                org_id AS "orgId", node, issued_at AS "issuedAt", not_before AS "notBefore", expires_at AS "expiresAt",
                revoked_at AS "revokedAt", replaced_at AS "replacedAt", replaced_by AS "replacedBy", jkt
              FROM tokens WHERE tokens.digest = q.digest) t) ORDER BY q.i) FROM q);
      END
      $fn$;
    `,
  },
  {
    // The bounded outbox (docs/events.md): a receiver's pending deliveries become dead letters
    // once their event is older than its retention, applied by serve's housekeeping. A receiver
    // of before gets the default, 24 hours.
    version: 12,
    name: 'security events: a retention per receiver',
    // Older nodes apply no retention: their housekeeping leaves deliveries as before.
    change: 'expand',
    sql: `
      ALTER TABLE receivers ADD COLUMN retention_ms BIGINT NOT NULL DEFAULT 86400000;
    `,
  },
  {
    // Room on each page for a revocation as a HOT update (migration 4), at 70 % rather than 50 %:
    // measured on a million tokens, 50 left 355 MB with every revocation HOT, 70 left 252 MB with
    // ~87 % HOT, 90 left 200 MB with 32-50 % (docs/decisions.md). New pages only: rows already
    // written keep theirs until rewritten (docs/operations.md, giving disk back).
    version: 13,
    name: 'tokens and grants: fillfactor 70',
    // A storage parameter: older nodes read and write the tables as before.
    change: 'expand',
    sql: `
      ALTER TABLE tokens SET (fillfactor = 70);
      ALTER TABLE grants SET (fillfactor = 70);
    `,
  },
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
];

export const LATEST_SCHEMA_VERSION = Math.max(...MIGRATIONS.map((m) => m.version));

/** A double-quoted SQL identifier. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
