import type { AuditEntry, BulkBatch, BulkSelector, MintLimit, MintOutcome, RevocationEvent, RotateOutcome, TokenRecord } from '../store.js';
import { Rollback, type Database, type TransactionClient } from './database.js';
import { eventParams, oneEventCtes, OUTBOX_LOCK } from './event-writes.js';
import {
  auditParams,
  bulkGrantBatch,
  bulkSweep,
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
 * its BEGIN, before its snapshot (event-writes.ts). Even a revocation of one statement runs in
 * one: sent alone, it would run at the database's default level, and at REPEATABLE READ take
 * its snapshot before waiting for a receiver's registration, whose event it then misses
 * (test/race/postgres-events.test.ts); a named statement takes its snapshot at its Bind, before
 * the locks its plan needs, at any level.
 */
function revoking<T>(db: Database, work: (tx: TransactionClient) => Promise<T | Rollback<T>>, settings?: string): Promise<T> {
  return db.transaction(work, { lock: OUTBOX_LOCK, settings });
}

/**
 * The planner settings of a bulk revocation's transactions: the grants in index order and the
 * sweep from its tuple, whatever the statistics say. Right after a bulk load (before autovacuum
 * analyses the tables) PostgreSQL estimated a few hundred rows per selector, read them through a
 * bitmap and sorted them: every grant batch sorted all the grants left (on disk), ~100 ms each.
 */
const BULK_PLAN = 'SET LOCAL enable_bitmapscan = off; SET LOCAL enable_sort = off';

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
 * Mints, one statement under their grant locks (MINT_ACCESS): a revocation of a grant either
 * committed first, and the lock, waited for, shows the grant revoked; or it waits for this insert
 * to commit, and then revokes the new token too. One outcome per mint, in order.
 */
export async function mintOutcomes(db: Pick<TransactionClient, 'query'>, mints: readonly { access: TokenRecord; refreshJti: string; limit?: MintLimit | undefined }[]): Promise<MintOutcome[]> {
  const params = [
    ...tokenColumns(mints.map((m) => m.access)),
    mints.map((m) => m.refreshJti), mints.map((m) => m.limit?.since ?? null), mints.map((m) => m.limit?.max ?? null),
  ];
  const { rows } = await db.query<{ inserted: boolean; known: boolean; limited: boolean }>(MINT_ACCESS, params);
  return mints.map((_, k) => {
    const outcome = rows[k];
    if (outcome?.inserted) return 'inserted';
    if (!outcome?.known) return 'unknown';
    return outcome.limited ? 'limited' : 'revoked'; // limited: only when nothing else stopped it
  });
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
 * Where a bulk revocation of a user or a client is (its `resume`, opaque to the engine, as JSON):
 * a phase, and where in it (a tuple id for a sweep, a grant id for the grants; null: from the first).
 */
interface BulkStep {
  phase: 'sweep' | 'grants' | 'final';
  from: string | null;
  /**
   * In a sweep past its first step: where the grant batches running beside it are (a grant id;
   * null: from the first), or `true` once a batch from the first found fewer than `limit`.
   */
  grants?: string | null | true;
}

function encodeStep(step: BulkStep): string {
  return JSON.stringify(step);
}

function decodeStep(resume: string | undefined): BulkStep {
  try {
    const step = JSON.parse(resume ?? '') as BulkStep;
    if (['sweep', 'grants', 'final'].includes(step.phase)) return step;
  } catch {
    // none yet: the start
  }
  return { phase: 'sweep', from: null };
}

type SweepRow = { found: number; last: string | null; n: number };
type GrantsRow = { n: number; last: string | null };

/**
 * A bulk revocation of a user's or a client's tokens, in three phases of short transactions
 * (`limit` rows each), one or more phases per call while each finishes under its limit:
 *
 * 1. **sweep**: their live tokens, in the order the table holds them ({@link bulkSweep}). A
 *    token swept before its grant is locked leaves a grant that can mint nothing (its refresh
 *    token is revoked), so a crash here leaves nothing active that a second run would not see.
 * 2. **grants**: their grants, in grant_id order, locked and marked revoked ({@link bulkGrantBatch}).
 *    A batch that finds fewer than `limit` after a grant id starts again from the first: grants
 *    created behind it meanwhile, and ones a concurrent revocation held, are found there. Done
 *    when a batch from the first finds fewer than `limit`: from then on no grant of theirs mints.
 *    Once the sweep's first step found `limit` tokens (a big selector), the grant batches run
 *    beside the sweep's steps, each pair at once on two connections: rows of two tables, which
 *    neither waits on the other for, so the database works on both at once.
 * 3. **final**: a sweep again, for the tokens minted while 1 and 2 ran and any a concurrent
 *    update moved behind the sweep. Done when a step from the first tuple finds fewer than
 *    `limit`: it found every live one there was. Then, in a statement of its own (a new
 *    snapshot), a last look for a grant created meanwhile (back to 2) ({@link bulkRemainder}).
 *
 * The call's event is written by its first sweep step that revokes a token, in that statement
 * (ports/token-writes.ts: every call that revokes writes its own).
 *
 * Revoking grant by grant, as before, visited each grant's tokens through the grant index, in
 * random order across the table: 2.6 s for 100,000 tokens; the sweep writes them in place.
 */
export async function revokeBulk(db: Database, selector: BulkSelector, at: number, limit: number, audit?: AuditEntry, resume?: string, event?: RevocationEvent): Promise<BulkBatch> {
  if ('jti' in selector) return { revoked: await revokeJti(db, selector.jti, at, audit, event), more: false };
  const max = Math.max(1, limit);
  const start = decodeStep(resume);
  const sweepStep = async (tx: TransactionClient, from: string | null, withEvent: boolean): Promise<SweepRow> => {
    const sweep = bulkSweep(selector, at, max, from, audit, withEvent ? event : undefined);
    return (await tx.query<SweepRow>(sweep.sql, sweep.params)).rows[0] ?? { found: 0, last: null, n: 0 };
  };
  const grantBatch = async (tx: TransactionClient, from: string | null): Promise<GrantsRow> => {
    const batch = bulkGrantBatch(selector, at, max, from);
    return (await tx.query<GrantsRow>(batch.sql, batch.params)).rows[0] ?? { n: 0, last: null };
  };
  if (start.phase === 'sweep' && start.from !== null && start.grants !== undefined && start.grants !== true) {
    const after = start.grants;
    const [swept, locked] = await Promise.allSettled([
      revoking(db, (tx) => sweepStep(tx, start.from, true), BULK_PLAN),
      revoking(db, (tx) => grantBatch(tx, after), BULK_PLAN),
    ]);
    // What the sweep committed is counted even when the grant batch failed (that batch is tried
    // again with the next step, and a failure that lasts comes out there): the engine's count of
    // what was revoked before a failure stays exact.
    if (swept.status === 'rejected') throw swept.reason;
    const sweep = swept.value;
    const grants = locked.status === 'fulfilled' ? locked.value : undefined;
    const nextGrants = grants === undefined ? after : grants.n >= max ? grants.last : after === null ? true : null;
    const next: BulkStep =
      sweep.found >= max ? { phase: 'sweep', from: sweep.last, grants: nextGrants }
      : nextGrants === true ? { phase: 'final', from: null }
      : { phase: 'grants', from: nextGrants };
    return { revoked: sweep.n, more: true, resume: encodeStep(next) };
  }
  return revoking(db, async (tx) => {
    // Nothing outside changes here: the transaction may run again whole (database.ts).
    let step = start;
    let revoked = 0;
    const more = (next: BulkStep): BulkBatch => ({ revoked, more: true, resume: encodeStep(next) });
    for (;;) {
      if (step.phase === 'grants') {
        const row = await grantBatch(tx, step.from);
        if (row.n >= max) return more({ ...step, from: row.last });
        step = { phase: step.from === null ? 'final' : 'grants', from: null };
        continue;
      }
      // One event a call: with the first sweep of it that revokes.
      const row = await sweepStep(tx, step.from, revoked === 0);
      revoked += row.n;
      // A sweep's first step that found a full batch: the grant batches start beside its next steps.
      if (row.found >= max) return more({ ...step, from: row.last, ...(step.phase === 'sweep' && { grants: step.grants ?? null }) });
      if (step.phase === 'sweep') {
        step = step.grants === true ? { phase: 'final', from: null } : { phase: 'grants', from: step.grants ?? null };
        continue;
      }
      if (step.from !== null) {
        step = { phase: 'final', from: null };
        continue;
      }
      const last = bulkRemainder(selector);
      if ((await tx.query<{ more: boolean }>(last.sql, last.params)).rows[0]?.more === true) return more({ phase: 'grants', from: null });
      return { revoked, more: false };
    }
  }, BULK_PLAN);
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
