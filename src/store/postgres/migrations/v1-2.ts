import { APPLICATION, BEFORE_ROLLING_UPGRADES, META_TABLE, type Migration } from './migration.js';

/** Migrations 1 to 2 of the schema history (migrations.ts): shipped, so never edited. */
export const MIGRATIONS_1_TO_2: readonly Migration[] = [
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
];
