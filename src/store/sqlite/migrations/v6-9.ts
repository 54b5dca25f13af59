import type { Migration } from './migration.js';

/** Migrations 6 to 9 of the schema history (migrations.ts): shipped, so never edited. */
export const MIGRATIONS_6_TO_9: readonly Migration[] = [
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
];
