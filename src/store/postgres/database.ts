import { createHash } from 'node:crypto';
import type { Pool, PoolClient, QueryConfig, QueryResult, QueryResultRow } from 'pg';
import { StoreUnavailableError } from '../store.js';
import { errorCode, isRetryable, mapPgError } from './errors.js';
import { Qualifier } from './qualify.js';

/** What a transaction's work returns to roll back instead of committing. */
export class Rollback<T> {
  constructor(readonly value: T) {}
}

/** The connection a transaction's work runs its statements on (table names qualified, as {@link Database.query}). */
export interface TransactionClient {
  query<R extends QueryResultRow = QueryResultRow>(sql: string, params?: unknown[]): Promise<QueryResult<R>>;
}

/**
 * What a pooler in transaction mode that does not track prepared statements (PgBouncer before
 * 1.21, or with max_prepared_statements = 0) answers a named statement with, when the
 * transaction lands on another server connection: "prepared statement does not exist"
 * (26000) or "already exists" (42P05). Either fails before the statement runs.
 */
const PREPARED_STATEMENTS_LOST = new Set(['26000', '42P05']);

/**
 * The isolation level every transaction names (contract 6): READ COMMITTED, whose row locks and
 * re-checks the store's statements are written for, or SERIALIZABLE for a database that offers
 * nothing else (CockroachDB). Never the database's default, which a DBA or a distributed
 * database may have set to REPEATABLE READ: a transaction's second statement would then miss
 * rows committed by a writer it waited for (PostgreSQL docs, "Transaction Isolation", 13.2).
 */
export type Isolation = 'read committed' | 'serializable';

export interface DatabaseOptions {
  /** The store's schema: its table names are qualified with it in every statement (no search_path needed). */
  schema?: string;
  /** Server-side limit on each statement of a transaction (SET LOCAL); 0 for none. */
  statementTimeoutMs?: number;
  /** How long deadlock and serialization failures are retried before the store counts as unavailable. */
  retryBudgetMs?: number;
  /** Every transaction's isolation level; default READ COMMITTED. */
  isolation?: Isolation;
}

/** The first retry waits up to this long, each next one up to twice as long as the one before ... */
const BACKOFF_BASE_MS = 5;
/** ... but never more than this. */
const BACKOFF_CAP_MS = 250;
const DEFAULT_RETRY_BUDGET_MS = 2_000;
/** How much longer than a statement's server-side limit an attempt may take in all: what the docs promise. */
const CLIENT_GRACE_MS = 1_000;

/**
 * Runs the store's statements on its pool: each statement in its own transaction, or several
 * in one; a deadlock or serialization victim is run again; pg's errors come out in the store's
 * vocabulary (errors.ts). Nothing here is specific to tokens.
 *
 * No connection carries session state, so that the store works through a pooler in transaction
 * mode (PgBouncer) as directly: table names are qualified with the store's schema in each
 * statement (qualify.ts) instead of a search_path, and a transaction's timeouts are SET LOCAL,
 * sent with its BEGIN in the same round trip. A single statement outside a transaction is
 * bounded by the pool's client-side query timeout (pool.ts).
 */
export class Database {
  private ended: Promise<void> | undefined;
  private readonly qualifier: Qualifier | undefined;
  private readonly begin: string;
  private readonly retryBudgetMs: number;
  /** One attempt's whole budget (waiting for a connection, every statement), 0 for none. */
  private readonly attemptDeadlineMs: number;
  /** Named statements are used: until a pooler shows it cannot keep them (then never again). */
  private prepare = true;
  /** The name of each reused statement, by its qualified text. */
  private readonly names = new Map<string, string>();

  constructor(
    private readonly pool: Pool,
    private readonly location: string,
    options: DatabaseOptions = {},
  ) {
    this.qualifier = options.schema === undefined ? undefined : new Qualifier(options.schema);
    this.begin = beginStatement(options.statementTimeoutMs ?? 0, options.isolation ?? 'read committed');
    this.retryBudgetMs = options.retryBudgetMs ?? DEFAULT_RETRY_BUDGET_MS;
    const statementTimeoutMs = options.statementTimeoutMs ?? 0;
    this.attemptDeadlineMs = statementTimeoutMs > 0 ? statementTimeoutMs + CLIENT_GRACE_MS : 0;
  }

  /** pg's query of a reused statement: named after a digest of its text, so that one name is one text on every connection. */
  private named(text: string, values: unknown[]): QueryConfig {
    if (!this.prepare) return { text, values };
    let name = this.names.get(text);
    if (name === undefined) {
      name = `tokenctl_${createHash('sha256').update(text).digest('hex').slice(0, 32)}`;
      this.names.set(text, name);
    }
    return { name, text, values };
  }

  /** One statement, in its own transaction. */
  async query<R extends QueryResultRow = QueryResultRow>(sql: string, params: unknown[] = []): Promise<QueryResult<R>> {
    this.check();
    const text = this.qualify(sql);
    return this.retrying(() => this.pool.query<R>(text, params));
  }

  /**
   * One statement of fixed text that runs often, in its own transaction: prepared once per
   * connection, under a name derived from its text, so that PostgreSQL plans it once per
   * connection instead of at every call (a large part of a small batch's cost; bench/README.md).
   * Sent unnamed once the store has met a pooler that cannot keep prepared statements.
   */
  async reuse<R extends QueryResultRow = QueryResultRow>(sql: string, params: unknown[] = []): Promise<QueryResult<R>> {
    this.check();
    const text = this.qualify(sql);
    return this.retrying(() => this.pool.query<R>(this.named(text, params)));
  }

  /**
   * One statement of fixed text (reused as {@link reuse} says) in a transaction of its own that
   * names its isolation level, with `lock` taken before its snapshot, as {@link transaction}
   * does: BEGIN, the statement and COMMIT go out together, pipelined (the pool's connections are
   * in pg's pipeline mode, pool.ts), so the transaction costs one round trip, not three. A
   * statement that fails leaves the transaction aborted, and the COMMIT behind it rolls it back.
   */
  async alone<R extends QueryResultRow = QueryResultRow>(sql: string, params: unknown[], options: { lock?: string } = {}): Promise<QueryResult<R>> {
    this.check();
    const text = this.qualify(sql);
    const begin = this.beginWith(options);
    return this.retrying(() =>
      withClient(this.pool, async (connection) => {
        const sent = [connection.query(begin), connection.query<R>(this.named(text, params)), connection.query('COMMIT')] as const;
        const [began, result, committed] = await Promise.allSettled(sent);
        for (const step of [began, result, committed]) if (step.status === 'rejected') throw step.reason;
        const answer = (result as PromiseFulfilledResult<QueryResult<R>>).value;
        // COMMIT answers ROLLBACK for a transaction that failed; every step succeeded, so it did not.
        if ((committed as PromiseFulfilledResult<QueryResult>).value.command !== 'COMMIT') throw new Error(`the transaction of ${this.location} ended in ${(committed as PromiseFulfilledResult<QueryResult>).value.command}`);
        return answer;
      }),
    );
  }

  /**
   * Runs `work` in one transaction on one connection: committed if it returns a value, rolled
   * back if it returns a {@link Rollback} or throws. Run again whole after a deadlock or a
   * serialization failure, so `work` must do nothing but its statements.
   *
   * `lock`, a `LOCK TABLE` statement, is sent with the BEGIN (the same round trip): it is taken
   * before the transaction's first snapshot, which SERIALIZABLE keeps for the whole transaction.
   * `settings`, `SET LOCAL` statements (planner settings), go with it too, and end with it.
   */
  async transaction<T>(work: (db: TransactionClient) => Promise<T | Rollback<T>>, options: { lock?: string; settings?: string } = {}): Promise<T> {
    this.check();
    const begin = this.beginWith(options);
    return this.retrying(() =>
      withClient(this.pool, async (connection) => {
        const db: TransactionClient = {
          query: <R extends QueryResultRow = QueryResultRow>(sql: string, params: unknown[] = []) => connection.query<R>(this.qualify(sql), params),
        };
        await connection.query(begin);
        try {
          const result = await work(db);
          await connection.query(result instanceof Rollback ? 'ROLLBACK' : 'COMMIT');
          return result instanceof Rollback ? result.value : result;
        } catch (error) {
          await connection.query('ROLLBACK').catch(() => undefined); // a broken connection has rolled back already
          throw error;
        }
      }),
    );
  }

  /** BEGIN with `lock` and `settings` after it, in the same round trip (see {@link transaction}). */
  private beginWith(options: { lock?: string; settings?: string }): string {
    return [this.begin, ...(options.lock === undefined ? [] : [this.qualify(options.lock)]), ...(options.settings === undefined ? [] : [options.settings])].join('; ');
  }

  /** The pool's connections now (open, idle) and the callers waiting for one. */
  poolState(): { total: number; idle: number; waiting: number } {
    return { total: this.pool.totalCount, idle: this.pool.idleCount, waiting: this.pool.waitingCount };
  }

  /** Ends the pool; idempotent. */
  async close(): Promise<void> {
    this.ended ??= this.pool.end();
    await this.ended;
  }

  /** `sql` with the store's tables in its schema. */
  qualify(sql: string): string {
    return this.qualifier?.qualify(sql) ?? sql;
  }

  /**
   * Runs `attempt` until it succeeds, fails for good, or deadlock and serialization failures
   * (which PostgreSQL rolled back whole) have used up the retry budget: then the store is
   * unavailable for now (503 with Retry-After), not broken. Waits are exponential with full
   * jitter, so that the victims of one conflict do not collide again in step.
   */
  private async retrying<T>(attempt: () => Promise<T>): Promise<T> {
    const started = Date.now();
    for (let n = 0; ; n++) {
      try {
        return await this.withinDeadline(attempt);
      } catch (error) {
        if (this.prepare && PREPARED_STATEMENTS_LOST.has(errorCode(error) ?? '')) {
          // A pooler between us and PostgreSQL: the attempt failed before its statement ran; run it again unnamed.
          this.prepare = false;
          continue;
        }
        if (!isRetryable(error)) throw mapPgError(error, this.location);
        const wait = Math.random() * Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** n);
        const elapsed = Date.now() - started;
        if (elapsed + wait > this.retryBudgetMs) {
          const what = (error as { code?: string }).code === '40P01' ? 'deadlocks' : 'serialization failures';
          throw new StoreUnavailableError(
            `the PostgreSQL store ${this.location} is unavailable: ${what} with concurrent transactions persisted through ${n + 1} attempts in ${elapsed} ms`,
            { cause: error },
          );
        }
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }

  /**
   * `attempt`, or a StoreUnavailableError once the attempt's deadline has passed. pg bounds each
   * wait by itself (a connection, each statement's answer), but not their sum: a database that
   * accepts connections and never answers held a transaction for the connection timeout plus
   * its BEGIN's. What the attempt still holds ends with pg's own timeouts, after the caller has
   * its answer.
   */
  private async withinDeadline<T>(attempt: () => Promise<T>): Promise<T> {
    if (this.attemptDeadlineMs <= 0) return attempt();
    let timer: NodeJS.Timeout | undefined;
    const running = attempt();
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new StoreUnavailableError(`the PostgreSQL store ${this.location} is unavailable: no answer within ${this.attemptDeadlineMs} ms`)),
        this.attemptDeadlineMs,
      );
    });
    try {
      return await Promise.race([running, late]);
    } finally {
      clearTimeout(timer);
      running.catch(() => undefined); // settled after the deadline: nobody is waiting for it
    }
  }

  private check(): void {
    if (this.ended !== undefined) throw new Error(`the store ${this.location} is closed`);
  }
}

/**
 * BEGIN with its isolation level and the transaction's limits, in one simple-protocol round
 * trip: a statement may run `statementTimeoutMs`, and a transaction left open by a vanished
 * client holds its row locks for at most twice that. SET LOCAL ends with the transaction, so
 * nothing stays on the connection for its next user.
 */
export function beginStatement(statementTimeoutMs: number, isolation: Isolation): string {
  const begin = `BEGIN ISOLATION LEVEL ${isolation.toUpperCase()}`;
  if (statementTimeoutMs <= 0) return begin;
  const ms = Math.round(statementTimeoutMs);
  return `${begin}; SET LOCAL statement_timeout = ${ms}; SET LOCAL idle_in_transaction_session_timeout = ${ms * 2}`;
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
