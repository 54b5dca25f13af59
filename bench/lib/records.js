/**
 * Store records for the micro benchmarks, which write through a store's own methods (below the
 * engine): every field the current records have, so that a new field of ClientRecord or
 * TokenRecord is added here once, not in each script (a missing one fails the insert).
 */

/** A client record with the store's defaults; `fields` overrides. @param {Record<string, unknown>} fields */
export function clientRecord(fields) {
  const now = Date.now();
  return {
    id: 'bench', name: 'bench', secretHash: null, scope: '', orgId: 'org', audience: 'api', accessTtlMs: null, refreshTtlMs: null,
    createdAt: now, secretUpdatedAt: now, redirectUris: [], grantTypes: ['refresh_token'], loginProvider: false, requireDpop: false,
    ...fields,
  };
}

/** A token record, active, of no grant of note; `fields` overrides (jti, digest, type, clientId at least). @param {Record<string, unknown>} fields */
export function tokenRecord(fields) {
  const now = Date.now();
  return {
    grantId: fields.jti, username: 'alice', sub: 'alice', scope: 'read', audience: 'api', orgId: 'org', node: 'micro',
    issuedAt: now, notBefore: now, expiresAt: now + 86_400_000, revokedAt: null, replacedAt: null, replacedBy: null, jkt: null,
    ...fields,
  };
}

/** A receiver record (push unless `fields` say poll), with the store's default retention. @param {Record<string, unknown>} fields */
export function receiverRecord(fields) {
  return {
    delivery: 'push', endpointUrl: null, authorization: null, caPem: null, clientId: null, audience: 'r', createdAt: Date.now(),
    stream: null, retentionMs: 86_400_000,
    ...fields,
  };
}
