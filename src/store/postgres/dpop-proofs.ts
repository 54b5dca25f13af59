import type { DpopProofStore } from '../ports/dpop-proofs.js';
import type { Database } from './database.js';

/**
 * The DPoP proofs seen (ports/dpop-proofs.ts; migration 9's table), shared by every node on the
 * database. Remembering is one statement: insert-if-absent (an entry past its window is reused),
 * which of concurrent inserts of one key lets exactly one through (the others wait for its commit
 * and then find it), and beside it the deletion of a few entries past their window, skipping rows
 * another node is deleting, so that the table stays at about one window's proofs (75 s).
 */
const REMEMBER = `WITH sweep AS (DELETE FROM dpop_proofs WHERE key IN (
      SELECT key FROM dpop_proofs WHERE until <= $3 AND key <> $1 ORDER BY until LIMIT 2 FOR UPDATE SKIP LOCKED))
  INSERT INTO dpop_proofs (key, until) VALUES ($1, $2)
  ON CONFLICT (key) DO UPDATE SET until = EXCLUDED.until WHERE dpop_proofs.until <= $3
  RETURNING 1`;

const PURGE = `DELETE FROM dpop_proofs WHERE key IN (
    SELECT key FROM dpop_proofs WHERE until < $1 ORDER BY until LIMIT $2 FOR UPDATE SKIP LOCKED)`;

export class PostgresDpopProofs implements DpopProofStore {
  constructor(private readonly db: Pick<Database, 'query'>) {}

  async rememberDpopProof(key: string, until: number, now: number): Promise<boolean> {
    return ((await this.db.query(REMEMBER, [key, until, now])).rowCount ?? 0) === 1;
  }

  async purgeDpopProofs(before: number, batchSize: number): Promise<number> {
    return (await this.db.query(PURGE, [before, batchSize])).rowCount ?? 0;
  }
}
