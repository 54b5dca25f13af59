import type { Pool, PoolClient, QueryResult, QueryResultRow } from 'pg';
import { isRetryable, mapPgError } from './errors.js';

/** A deadlock victim is rolled back whole by PostgreSQL, so running it again is safe. */
const MAX_ATTEMPTS = 3;

/** What a transaction's work returns to roll back instead of committing. */
export class Rollback<T> {
  constructor(readonly value: T) {}
}

/**
 * Runs the store's statements on its pool: each statement in its own transaction, or several
 * in one; a deadlock victim is run again; pg's errors come out in the store's vocabulary
 * (errors.ts). Nothing here is specific to tokens.
 */
export class Database {
  private ended: Promise<void> | undefined;

  constructor(
    private readonly pool: Pool,
    private readonly location: string,
  ) {}

  /** One statement, in its own transaction. */
  async query<R extends QueryResultRow = QueryResultRow>(sql: string, params: unknown[] = []): Promise<QueryResult<R>> {
    this.check();
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.pool.query<R>(sql, params);
      } catch (error) {
        if (attempt < MAX_ATTEMPTS && isRetryable(error)) continue;
        throw mapPgError(error, this.location);
      }
    }
  }

  /**
   * Runs `work` in one transaction on one connection: committed if it returns a value, rolled
   * back if it returns a {@link Rollback} or throws.
   */
  async transaction<T>(work: (db: PoolClient) => Promise<T | Rollback<T>>): Promise<T> {
    this.check();
    for (let attempt = 1; ; attempt++) {
      try {
        return await withClient(this.pool, async (db) => {
          await db.query('BEGIN');
          try {
            const result = await work(db);
            await db.query(result instanceof Rollback ? 'ROLLBACK' : 'COMMIT');
            return result instanceof Rollback ? result.value : result;
          } catch (error) {
            await db.query('ROLLBACK').catch(() => undefined); // a broken connection has rolled back already
            throw error;
          }
        });
      } catch (error) {
        if (attempt < MAX_ATTEMPTS && isRetryable(error)) continue;
        throw mapPgError(error, this.location);
      }
    }
  }

  /** Ends the pool; idempotent. */
  async close(): Promise<void> {
    this.ended ??= this.pool.end();
    await this.ended;
  }

  private check(): void {
    if (this.ended !== undefined) throw new Error(`the store ${this.location} is closed`);
  }
}

/**
 * Lends `work` one connection of the pool. While lent, the connection's 'error' event (the
 * server went away between two statements) needs a listener, or the process would crash; the
 * next statement reports the failure. A connection that failed is destroyed, not reused.
 */
export async function withClient<T>(pool: Pool, work: (db: PoolClient) => Promise<T>): Promise<T> {
  const db = await pool.connect();
  const ignore = (): void => undefined;
  db.on('error', ignore);
  let failed = false;
  try {
    return await work(db);
  } catch (error) {
    failed = true;
    throw error;
  } finally {
    db.off('error', ignore);
    db.release(failed);
  }
}
