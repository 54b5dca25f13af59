import { BEFORE_ROLLING_UPGRADES, type Migration } from './migration.js';

/** Migrations 6 to 8 of the schema history (migrations.ts): shipped, so never edited. */
export const MIGRATIONS_6_TO_8: readonly Migration[] = [
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
];
