import type Database from 'better-sqlite3';
import type { DpopProofStore } from '../ports/dpop-proofs.js';

/**
 * The DPoP proofs seen (ports/dpop-proofs.ts; migration 7's table), in the store's file, so that
 * every worker and process on it refuses a proof another one accepted. Each remember step also
 * deletes up to {@link SWEEP} entries past their window: the table stays at about the proofs of
 * one window (75 s) without waiting for `tokenctl purge`.
 */
const SWEEP = 2;

/** The store's write and read steps (store.ts): writes go through its group commit. */
export interface DpopProofSteps {
  write<T>(step: () => T): Promise<T>;
}

export class SqliteDpopProofs implements DpopProofStore {
  private readonly st;

  constructor(
    db: Database.Database,
    private readonly steps: DpopProofSteps,
  ) {
    this.st = {
      // Insert-if-absent in one statement; an entry past its window is reused (RFC 9449 §11.1).
      remember: db.prepare('INSERT INTO dpop_proofs (key, until) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET until = excluded.until WHERE until <= ?'),
      sweep: db.prepare(`DELETE FROM dpop_proofs WHERE key IN (SELECT key FROM dpop_proofs WHERE until <= ? ORDER BY until LIMIT ${SWEEP})`),
      purge: db.prepare('DELETE FROM dpop_proofs WHERE key IN (SELECT key FROM dpop_proofs WHERE until < ? ORDER BY until LIMIT ?)'),
    };
  }

  async rememberDpopProof(key: string, until: number, now: number): Promise<boolean> {
    return this.steps.write(() => {
      this.st.sweep.run(now);
      return this.st.remember.run(key, until, now).changes === 1;
    });
  }

  async purgeDpopProofs(before: number, batchSize: number): Promise<number> {
    return this.steps.write(() => this.st.purge.run(before, batchSize).changes);
  }
}
