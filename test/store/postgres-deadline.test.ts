import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Database } from '../../src/store/postgres/database.js';
import { createPool } from '../../src/store/postgres/pool.js';
import { StoreUnavailableError } from '../../src/store/store.js';
import { startSilentServer } from '../helpers/pg.js';

/**
 * One attempt of a statement or a transaction is bounded as a whole (the statement timeout +
 * 1 s), against a real TCP listener on 127.0.0.1 that accepts and never answers: pg bounds the
 * connection wait (3 s here) and each answer on its own, not their sum. No PostgreSQL needed.
 */
describe('a database that accepts connections and never answers', () => {
  let silent: Awaited<ReturnType<typeof startSilentServer>>;
  let db: Database;
  const STATEMENT_TIMEOUT_MS = 300;

  beforeAll(async () => {
    silent = await startSilentServer();
    const pool = createPool(`postgres://postgres@127.0.0.1:${silent.port}/test`, { poolSize: 2, connectionTimeoutMs: 3_000, statementTimeoutMs: STATEMENT_TIMEOUT_MS });
    db = new Database(pool, 'the black hole', { statementTimeoutMs: STATEMENT_TIMEOUT_MS });
  });
  afterAll(async () => {
    await silent.close();
    await db.close().catch(() => undefined);
  });

  it.each([
    ['a statement', () => db.query('SELECT 1')],
    ['a transaction', () => db.transaction(async (tx) => (await tx.query('SELECT 1')).rowCount)],
  ])('%s: StoreUnavailableError within the statement timeout + 1 s, not the connection timeout', async (_, run) => {
    const started = Date.now();
    await expect(run()).rejects.toBeInstanceOf(StoreUnavailableError);
    const ms = Date.now() - started;
    expect(ms).toBeGreaterThanOrEqual(STATEMENT_TIMEOUT_MS + 1_000 - 50);
    expect(ms).toBeLessThan(STATEMENT_TIMEOUT_MS + 1_000 + 700);
  });
});
