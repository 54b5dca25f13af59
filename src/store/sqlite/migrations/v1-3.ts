import type { Migration } from './migration.js';

/** Migrations 1 to 3 of the schema history (migrations.ts): shipped, so never edited. */
export const MIGRATIONS_1_TO_3: readonly Migration[] = [
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
];
