import type { Migration } from './migration.js';

/** Migrations 9 to 13 of the schema history (migrations.ts): shipped, so never edited. */
export const MIGRATIONS_9_TO_13: readonly Migration[] = [
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
];
