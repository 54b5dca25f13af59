import type Database from 'better-sqlite3';
import { TOKEN_TYPES, type BulkBatch, type BulkSelector, type MintLimit, type MintOutcome, type RotateOutcome, type StoreStats, type TokenRecord, type TokenState, type TokenType } from '../store.js';
import { insertToken, selectorKind, tokenFromRow, type prepareStatements } from './statements.js';

type Statements = ReturnType<typeof prepareStatements>;

/**
 * The store's multi-statement steps. A write step is a plain function: it only ever runs inside
 * the group commit's BEGIN IMMEDIATE, in a savepoint of its own (group-commit.ts), which makes it
 * atomic (a step that throws is rolled back alone) without a second savepoint of its own; writers
 * take turns on the file, whatever process they run in, so nothing commits between a step's check
 * and its write. `stats` is a read transaction of its own.
 */
export function prepareTransactions(db: Database.Database, st: Statements) {
  return {
    /** One batch of a bulk revocation (store.ts revokeBulk, which writes its trail); a write step. */
    revokeBulk(selector: BulkSelector, at: number, limit: number, resume: string | undefined): BulkBatch {
      const kind = selectorKind(selector);
      // A jti names one token or one grant: one step. Users and clients go a window of rows at a
      // time, so that a large revocation never holds the write lock for long (statements.ts).
      if (kind === 'jti') return { revoked: st.bulk.jti.revoke.run({ ...selector, at }).changes, more: false };
      const stmts = st.bulk[kind];
      const batch = Math.max(1, limit);
      const after = resume === undefined ? 0 : Number(resume);
      const { n, last } = stmts.window.get({ ...selector, after, limit: batch }) as { n: number; last: number | null };
      if (n === 0 || last === null) return { revoked: 0, more: false };
      const revoked = stmts.revokeWindow.run({ ...selector, at, after, last }).changes;
      return { revoked, more: n === batch, resume: String(last) };
    },
    insertMany: (tokens: TokenRecord[]) => {
      for (const t of tokens) insertToken(st.insert, t);
    },
    /** Whether this call revoked the token (store.ts revokeToken writes its trail). */
    revoke: (jti: string, at: number, cascade: boolean): boolean => {
      if (cascade) {
        const t = tokenFromRow(st.byJti.get(jti) as unknown[] | undefined);
        if (!t || st.revokeOne.run(at, jti).changes !== 1) return false;
        st.revokeGrant.run(at, t.grantId);
      } else if (st.revokeOne.run(at, jti).changes !== 1) {
        return false;
      }
      return true;
    },
    /** Two statements, one of them the only write: atomic without a savepoint (see SqliteStore.mint). */
    mint: (access: TokenRecord, refreshJti: string, limit: MintLimit | undefined): MintOutcome => {
      // Without a limit: nothing issued after +∞, counted up to 0.
      const state = st.mintState.get(limit?.since ?? Number.MAX_VALUE, limit?.max ?? 0, refreshJti) as [number, number] | undefined;
      if (state === undefined) return 'unknown';
      if (state[0]) return 'revoked';
      if (limit && state[1] >= limit.max) return 'limited';
      insertToken(st.insert, access);
      return 'inserted';
    },
    rotate: (oldJti: string, issued: TokenRecord[], at: number, revokeJti?: string): RotateOutcome => {
      const next = issued.find((t) => t.type === 'refresh_token')?.jti ?? null;
      if (revokeJti === undefined) {
        // The conditional update decides the race: only one caller can see changes === 1.
        if (st.replace.run(at, next, oldJti).changes !== 1) return 'conflict';
      } else {
        if (st.revokeLost.run({ at, lost: revokeJti, old: oldJti, next }).changes !== 1) return 'conflict';
        st.revokeLostAccess.run({ at, lost: revokeJti, old: oldJti });
        st.repoint.run(at, next, oldJti);
      }
      for (const t of issued) insertToken(st.insert, t);
      return 'rotated';
    },
    // Run as a read transaction, so that the counts describe one moment even while others write.
    stats: db.transaction((now: number, clientId?: string): StoreStats => {
      const tokens = Object.fromEntries(TOKEN_TYPES.map((type) => [type, { active: 0, expired: 0, revoked: 0 }])) as StoreStats['tokens'];
      const [byState, oldest] = clientId === undefined ? [st.tokenStats, st.oldestExpired] : [st.clientTokenStats, st.clientOldestExpired];
      const params = clientId === undefined ? { now } : { now, clientId };
      for (const row of byState.all(params) as { type: TokenType; state: TokenState; n: number }[]) tokens[row.type][row.state] = row.n;
      const clients = (st.countClients.get() as { n: number }).n;
      const oldestExpiredAt = (oldest.get(params) as { at: number | null }).at;
      return { clients, tokens, oldestExpiredAt };
    }),
  };
}
