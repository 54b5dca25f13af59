import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Database } from '../../src/store/postgres/database.js';
import { createPool } from '../../src/store/postgres/pool.js';
import { StoreUnavailableError } from '../../src/store/store.js';
import { PG_SKIP_MESSAGE, PG_URL, dropSchema, testSchemaName, withPg } from '../helpers/pg.js';

/**
 * Deadlocks and serialization failures, raised by the real server: PostgreSQL rolled the victim
 * back whole, so the store runs it again, waiting a jittered, growing while between attempts,
 * and past its retry budget answers "unavailable" (503 with Retry-After over HTTP), never a
 * failure of the request itself.
 */

if (!PG_URL) {
  console.warn(PG_SKIP_MESSAGE);
  it.skip(PG_SKIP_MESSAGE, () => undefined);
}

/** A statement the server fails with SQLSTATE 40001 (serialization_failure), as SERIALIZABLE would. */
const SERIALIZATION_FAILURE = "DO $$ BEGIN RAISE EXCEPTION 'could not serialize access' USING ERRCODE = 'serialization_failure'; END $$";

describe.skipIf(!PG_URL)('PostgreSQL store: deadlock and serialization retries', () => {
  const url = PG_URL ?? '';
  const schema = testSchemaName();
  const databases: Database[] = [];
  const open = (retryBudgetMs = 2_000) => {
    const db = new Database(createPool(url, { poolSize: 4, connectionTimeoutMs: 3_000, statementTimeoutMs: 10_000 }), 'test-db', {
      schema,
      statementTimeoutMs: 10_000,
      retryBudgetMs,
    });
    databases.push(db);
    return db;
  };

  beforeAll(async () => {
    await withPg(url, undefined, (db) =>
      db.query(`CREATE SCHEMA "${schema}"; CREATE TABLE "${schema}".tokens (jti int PRIMARY KEY, n int NOT NULL);
        INSERT INTO "${schema}".tokens VALUES (1, 0), (2, 0)`),
    );
  });
  afterAll(async () => {
    for (const db of databases) await db.close();
    await dropSchema(url, schema);
  });

  it('runs a transaction again after serialization failures, and commits it once', async () => {
    const db = open();
    let attempts = 0;
    const started = Date.now();
    const result = await db.transaction(async (tx) => {
      attempts++;
      await tx.query('UPDATE tokens SET n = n + 1 WHERE jti = 1');
      if (attempts <= 3) await tx.query(SERIALIZATION_FAILURE);
      return 'done';
    });
    expect(result).toBe('done');
    expect(attempts).toBe(4);
    // Rolled back three times, committed once.
    expect((await db.query<{ n: number }>('SELECT n FROM tokens WHERE jti = 1')).rows[0]?.n).toBe(1);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('runs the loser of a real deadlock again: both transactions commit', async () => {
    const db = open();
    let arrived = 0;
    let bothHold!: () => void;
    const barrier = new Promise<void>((resolve) => (bothHold = resolve));
    const firstAttempts = [0, 0];
    // Each locks one row, waits until the other holds its row, then wants the other's row.
    const crosswise = (index: number, first: number, second: number) =>
      db.transaction(async (tx) => {
        firstAttempts[index]!++;
        await tx.query('UPDATE tokens SET n = n + 10 WHERE jti = $1', [first]);
        if (firstAttempts[index] === 1) {
          if (++arrived === 2) bothHold();
          await barrier;
        }
        await tx.query('UPDATE tokens SET n = n + 10 WHERE jti = $1', [second]);
        return index;
      });
    const before = (await db.query<{ jti: number; n: number }>('SELECT jti, n FROM tokens ORDER BY jti')).rows;
    expect(await Promise.all([crosswise(0, 1, 2), crosswise(1, 2, 1)])).toEqual([0, 1]);
    expect(firstAttempts[0]! + firstAttempts[1]!).toBe(3); // one deadlock victim, run once more
    const after = (await db.query<{ jti: number; n: number }>('SELECT jti, n FROM tokens ORDER BY jti')).rows;
    expect(after.map((r, i) => r.n - before[i]!.n)).toEqual([20, 20]);
  }, 15_000);

  it('gives up when the failures last past the retry budget: StoreUnavailableError, after growing waits', async () => {
    const db = open(300);
    let attempts = 0;
    const started = Date.now();
    const error = await db
      .transaction(async (tx) => {
        attempts++;
        await tx.query(SERIALIZATION_FAILURE);
      })
      .catch((e: unknown) => e);
    const elapsed = Date.now() - started;
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as Error).message).toMatch(/test-db is unavailable: serialization failures .* \d+ attempts/);
    expect((error as { cause?: { code?: string } }).cause?.code).toBe('40001');
    expect(attempts).toBeGreaterThan(3);
    expect(elapsed).toBeLessThan(1_500);

    // A single statement likewise.
    await expect(db.query(SERIALIZATION_FAILURE)).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  it('passes other errors on at once, untouched', async () => {
    const db = open();
    let attempts = 0;
    await expect(
      db.transaction(async (tx) => {
        attempts++;
        await tx.query('SELECT 1/0');
      }),
    ).rejects.toMatchObject({ code: '22012' });
    expect(attempts).toBe(1);
  });

  it('bounds every statement of a transaction on the server (SET LOCAL), and leaves nothing on the connection', async () => {
    const db = new Database(createPool(url, { poolSize: 1, connectionTimeoutMs: 3_000, statementTimeoutMs: 200 }), 'test-db', {
      schema,
      statementTimeoutMs: 200,
    });
    databases.push(db);
    const setting = "SELECT current_setting('statement_timeout') AS timeout";
    const serverDefault = (await withPg(url, undefined, (c) => c.query<{ timeout: string }>(setting))).rows[0]?.timeout;
    expect(serverDefault).not.toBe('200ms');
    // Inside a transaction, the limit; on the same (only) connection afterwards, the server's default.
    expect((await db.transaction((tx) => tx.query<{ timeout: string }>(setting))).rows[0]?.timeout).toBe('200ms');
    expect((await db.query<{ timeout: string }>(setting)).rows[0]?.timeout).toBe(serverDefault);

    const error = await db.transaction((tx) => tx.query('SELECT pg_sleep(2)')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as Error).message).toMatch(/statement timed out/);
  });
});
