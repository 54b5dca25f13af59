import type { AuditEntry, BulkBatch, BulkSelector, MintLimit, MintOutcome, RevocationEvent, RotateOutcome, TokenRecord } from '../store.js';
import { Rollback, type Database, type TransactionClient } from './database.js';
import { eventParams, oneEventCtes, OUTBOX_LOCK } from './outbox.js';
import {
  auditParams,
  bulkGrantBatch,
  bulkRemainder,
  FIRST_TUPLE,
  INSERT_AUDIT,
  INSERT_GRANT_TOKENS,
  LOCK_LIVE_GRANT_TX,
  LOCK_REVOKED_GRANT,
  LOCK_REVOKED_GRANT_OF_TOKEN,
  MINT_ACCESS,
  PURGE_BATCH,
  REVOKE_GRANT,
  REVOKE_GRANTS_LIVE,
  REVOKE_ONE,
  revocableQuery,
  revokeGrantParams,
  ROTATE,
  tokenColumns,
} from './statements.js';

/*
 * The PostgreSQL store's writes that decide races on grants: each one statement or one
 * transaction whose grant lock (grants row) orders it against every other (contract 3, "a
 * revocation is final"). Single-token revocations without a cascade, and mints, go through
 * batching.ts. And purge, whose scan goes on where the last batch stopped.
 */

/**
 * A transaction that revokes, and so may write a security event: the outbox's lock is taken with
 * its BEGIN, before its snapshot (outbox.ts).
 */
function revoking<T>(db: Database, work: (tx: TransactionClient) => Promise<T | Rollback<T>>): Promise<T> {
  return db.transaction(work, { lock: OUTBOX_LOCK });
}

/** revokeToken with the cascade: the token, and its whole grant, under the grant lock. */
export async function revokeWithGrant(db: Database, jti: string, at: number, audit?: AuditEntry, event?: RevocationEvent): Promise<boolean> {
  return revoking(db, async (tx) => {
    // The grant lock first, as every grant revocation; the token names its grant.
    const grantId = (await tx.query<{ grantId: string }>(LOCK_REVOKED_GRANT_OF_TOKEN, [at, jti])).rows[0]?.grantId;
    if (grantId === undefined) return new Rollback(false);
    // The row lock taken here makes this call the one that revoked it, or not.
    if ((await tx.query(REVOKE_ONE, [at, jti])).rowCount !== 1) return new Rollback(false);
    // The rest of the grant, the audit line and the event: one statement.
    await tx.query(REVOKE_GRANT, revokeGrantParams(at, grantId, audit, true, event));
    return true;
  });
}

/**
 * One mint, one statement under the grant lock (MINT_ACCESS): a revocation of the grant either
 * committed first, and the lock, waited for, shows the grant revoked; or it waits for this insert
 * to commit, and then revokes the new token too. On the pool, or inside a batch's transaction.
 */
export async function mintOutcome(db: Pick<TransactionClient, 'query'>, access: TokenRecord, refreshJti: string, limit?: MintLimit): Promise<MintOutcome> {
  const params = [...tokenColumns([access]), access.grantId, refreshJti, limit?.since ?? null, limit?.max ?? null];
  const { rows } = await db.query<{ inserted: boolean; known: boolean; limited: boolean }>(MINT_ACCESS, params);
  const outcome = rows[0];
  if (outcome?.inserted) return 'inserted';
  if (!outcome?.known) return 'unknown';
  return outcome.limited ? 'limited' : 'revoked'; // limited: only when nothing else stopped it
}

export async function revokeGrant(db: Database, grantId: string, at: number, audit?: AuditEntry, event?: RevocationEvent): Promise<number> {
  return revoking(db, async (tx) => {
    await tx.query(LOCK_REVOKED_GRANT, [at, grantId]);
    // A statement of its own: its snapshot, taken once the lock is ours, has every token minted
    // by a transaction that held the lock before us (READ COMMITTED; at SERIALIZABLE, a mint we
    // cannot see makes one of the two fail with a serialization error, and it runs again). The
    // audit line and the event go with it, when it changed anything.
    return (await tx.query<{ n: number }>(REVOKE_GRANT, revokeGrantParams(at, grantId, audit, false, event))).rows[0]?.n ?? 0;
  });
}

/**
 * A batch of grants in grant_id order, resumed after the last one revoked (`resume`). A batch
 * that finds fewer than `limit` sends the next back to the first grant: grants created behind the
 * cursor meanwhile, and ones a concurrent revocation held (FOR UPDATE waits, then skips what it
 * revoked), are found there. Done only when a batch from the first grant finds none unrevoked:
 * when it found the last ones, a statement of its own (a new snapshot) looks again, and the
 * revocation's one event is written with that look, when this batch revoked a token or earlier
 * batches ran (`resume` given).
 */
export async function revokeBulk(db: Database, selector: BulkSelector, at: number, limit: number, audit?: AuditEntry, resume?: string, event?: RevocationEvent): Promise<BulkBatch> {
  if ('jti' in selector) return { revoked: await revokeJti(db, selector.jti, at, audit, event), more: false };
  const max = Math.max(1, limit);
  const after = resume === undefined || resume === '' ? null : resume;
  return revoking(db, async (tx) => {
    const batch = bulkGrantBatch(selector, at, max, after);
    const rows = (await tx.query<{ grantId: string; last: string }>(batch.sql, batch.params)).rows;
    let revoked = 0;
    if (rows.length > 0) {
      // A statement of its own, after the grant locks: its snapshot has what mints holding them committed.
      revoked = (await tx.query(REVOKE_GRANTS_LIVE, [at, rows.map((r) => r.grantId)])).rowCount ?? 0;
      if (revoked > 0 && audit) await tx.query(INSERT_AUDIT, auditParams({ ...audit, count: revoked }));
    }
    if (rows.length === max) return { revoked, more: true, resume: rows[0]!.last };
    if (after !== null) return { revoked, more: true, resume: '' };
    const emit = revoked > 0 || resume !== undefined ? event : undefined;
    // Nothing found from the first grant, and no event to write: this batch's own look was the last.
    if (rows.length === 0 && emit === undefined) return { revoked: 0, more: false };
    const last = bulkRemainder(selector, emit);
    const more = (await tx.query<{ more: boolean }>(last.sql, last.params)).rows[0]?.more === true;
    return more ? { revoked, more: true, resume: '' } : { revoked, more: false };
  });
}

/** `revoke --jti`: the live token, and its whole grant under the grant lock when it is a refresh token. */
async function revokeJti(db: Database, jti: string, at: number, audit: AuditEntry | undefined, event: RevocationEvent | undefined): Promise<number> {
  const { sql, params, condition } = revocableQuery({ jti }, at);
  const statement = `${sql}, u AS (UPDATE tokens SET revoked_at = $1 WHERE ${condition} RETURNING 1),
    ${oneEventCtes(params.length + 1, 'EXISTS (SELECT 1 FROM u)')}
    SELECT count(*)::int AS n FROM u`;
  return revoking(db, async (tx) => {
    const named = (await tx.query<{ grantId: string; type: string }>('SELECT grant_id AS "grantId", type FROM tokens WHERE jti = $1', [jti])).rows[0];
    if (named?.type === 'refresh_token') await tx.query(LOCK_REVOKED_GRANT, [at, named.grantId]);
    const revoked = (await tx.query<{ n: number }>(statement, [...params, ...eventParams(event)])).rows[0]?.n ?? 0;
    if (revoked === 0) return new Rollback(0); // nothing live: the grant stays as it was
    if (audit) await tx.query(INSERT_AUDIT, auditParams({ ...audit, count: revoked }));
    return revoked;
  });
}

export async function rotateRefreshToken(db: Database, oldJti: string, issued: TokenRecord[], at: number, revokeJti?: string): Promise<RotateOutcome> {
  const next = issued.find((t) => t.type === 'refresh_token')?.jti ?? null;
  if (revokeJti === undefined) {
    const grantId = issued[0]?.grantId ?? (await grantOf(db, oldJti)) ?? null;
    const { rows } = await db.query<{ rotated: boolean }>(ROTATE, [...tokenColumns(issued), grantId, at, next, oldJti]);
    return rows[0]?.rotated ? 'rotated' : 'conflict';
  }
  return db.transaction<RotateOutcome>(async (tx) => {
    // Grace re-use. The grant lock first (a revocation of the grant waits, or has won), then the
    // old token: concurrent re-uses of it queue there, and only the first still finds it
    // pointing at the lost replacement.
    const grantId = (await tx.query<{ grantId: string }>('SELECT grant_id AS "grantId" FROM tokens WHERE jti = $1', [oldJti])).rows[0]?.grantId;
    if (grantId === undefined || (await tx.query(LOCK_LIVE_GRANT_TX, [grantId])).rowCount !== 1) return new Rollback('conflict');
    const repointed = await tx.query(
      'UPDATE tokens SET replaced_at = coalesce(replaced_at, $1), replaced_by = $2 WHERE jti = $3 AND revoked_at IS NULL AND replaced_by = $4',
      [at, next, oldJti, revokeJti],
    );
    if (repointed.rowCount !== 1) return new Rollback('conflict');
    // The lost replacement must still be current (not refreshed or revoked meanwhile); it is
    // superseded: revoked, and replaced by the new token, so that presenting it again is reuse.
    const lost = await tx.query(
      'UPDATE tokens SET revoked_at = $1, replaced_at = $1, replaced_by = $3 WHERE jti = $2 AND revoked_at IS NULL AND replaced_at IS NULL',
      [at, revokeJti, next],
    );
    if (lost.rowCount !== 1) return new Rollback('conflict');
    // And the access tokens issued with it, in the same response that was lost (never those of
    // the old token's own generation, should both have been issued in one millisecond).
    await tx.query(
      `UPDATE tokens SET revoked_at = $1 WHERE revoked_at IS NULL AND type = 'access_token'
        AND (grant_id, issued_at) = (SELECT grant_id, issued_at FROM tokens WHERE jti = $2)
        AND issued_at <> (SELECT issued_at FROM tokens WHERE jti = $3)`,
      [at, revokeJti, oldJti],
    );
    if (issued.length > 0) await tx.query(INSERT_GRANT_TOKENS, tokenColumns(issued));
    return 'rotated';
  });
}

async function grantOf(db: Database, jti: string): Promise<string | undefined> {
  return (await db.query<{ grantId: string }>('SELECT grant_id AS "grantId" FROM tokens WHERE jti = $1', [jti])).rows[0]?.grantId;
}

/** Where a process's next purge batch scans for revoked tokens from (a tuple id, PURGE_BATCH). */
export interface PurgeScan {
  from: string;
}

const NO_AUDIT: AuditEntry = { at: 0, actor: '', action: '', target: '', count: 0, detail: '' };

/**
 * One purge batch. Revoked tokens are found by a scan that goes on where this process's last
 * batch stopped (PURGE_BATCH); 0 is answered only once a scan from the first page found nothing.
 */
export async function purgeBatch(db: Database, scan: PurgeScan, before: number, batchSize: number, audit?: AuditEntry): Promise<number> {
  for (;;) {
    const from = scan.from;
    const a = audit ?? NO_AUDIT;
    const { rows } = await db.query<{ n: number; wanted: number; found: number; last: string | null }>(PURGE_BATCH, [
      before, Math.max(0, batchSize), from, audit !== undefined, a.at, a.actor, a.action, a.target, a.detail,
    ]);
    const row = rows[0] ?? { n: 0, wanted: 0, found: 0, last: null };
    // The scan reached the last page: the next one starts again from the first.
    if (row.wanted > 0) scan.from = row.found < row.wanted ? FIRST_TUPLE : (row.last ?? FIRST_TUPLE);
    if (row.n > 0 || from === FIRST_TUPLE || batchSize <= 0) return row.n;
  }
}
