import pg from 'pg';
import { hostListOf, writableHostClient } from './hosts.js';

export interface PoolSettings {
  /** Connections in the pool. */
  poolSize: number;
  /** How long to wait for a connection (a new one, or a free one from a full pool). */
  connectionTimeoutMs: number;
  /** Longest a statement may run: server side in transactions (database.ts); the client gives up a little later. */
  statementTimeoutMs: number;
}

/**
 * Connections a store opens at most, unless told otherwise: what one CLI command needs (its
 * statements run one after another), so that an operator still gets in when the nodes' pools
 * fill the server. `serve --pool-size` (default 8) sets the nodes' own: see docs/scale-out.md.
 */
export const DEFAULT_POOL_SIZE = 2;

/** PostgreSQL's int8 (BIGINT, count(*)) is our integer milliseconds: a JS number, exact below 2^53. */
const INT8_OID = 20;

/**
 * Type parsers for this pool only (pg's global `types` are shared with anyone else in the
 * process, so they stay untouched).
 */
const TYPES: pg.CustomTypesConfig = {
  getTypeParser: (oid: number, format?: 'text' | 'binary') => {
    if (oid === INT8_OID && format !== 'binary') return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format);
  },
};

/** Unquoted identifiers only: the same name in every statement that qualifies a table with it. */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * The `schema` parameter of a store URL (`postgres://host/db?schema=tokenctl`), if any. pg
 * itself ignores the parameter, so the URL is passed on unchanged.
 */
export function schemaFromUrl(url: string): string | undefined {
  const query = /\?([^#]*)/.exec(url)?.[1];
  return query === undefined ? undefined : (new URLSearchParams(query).get('schema') ?? undefined);
}

/**
 * The `isolation` parameter of a store URL (`?isolation=serializable`), or undefined: so that
 * every node and command given the same `--db` / TOKENCTL_DB runs at the same level.
 */
export function isolationFromUrl(url: string): 'read committed' | 'serializable' | undefined {
  const query = /\?([^#]*)/.exec(url)?.[1];
  const value = query === undefined ? null : new URLSearchParams(query).get('isolation');
  if (value === null) return undefined;
  const level = value.toLowerCase().replace(/[-_]/g, ' ');
  if (level === 'read committed' || level === 'serializable') return level;
  throw new Error(`invalid isolation "${value}" in the PostgreSQL store URL: use read-committed (the default) or serializable`);
}

export function checkSchemaName(schema: string): void {
  if (!SCHEMA_NAME.test(schema)) {
    throw new Error(`invalid PostgreSQL schema name "${schema}": use lower-case letters, digits and _ (at most 63)`);
  }
}

/**
 * A pool that survives the database going away: a broken idle connection is reported through
 * the pool's 'error' event (handled here, or the process would crash) and dropped, and the next
 * query opens a new one. Timeouts bound every wait, so an outage surfaces as an error, never as
 * a hang: connecting, statements (server side, set per transaction in database.ts), and reading
 * an answer (client side, for a statement outside a transaction and for a server that vanished
 * without closing the socket).
 *
 * Nothing is sent at connection start but the user, the database and application_name (which
 * PgBouncer passes on in every pool mode): no `options`, no search_path, no session timeouts.
 * PgBouncer in transaction mode refuses startup parameters it does not know, and would hand a
 * session setting to whichever client next borrows the server connection.
 */
export function createPool(url: string, settings: PoolSettings): pg.Pool {
  const hosts = hostListOf(url);
  const config = {
    connectionString: hosts?.firstUrl ?? url,
    max: settings.poolSize,
    connectionTimeoutMillis: settings.connectionTimeoutMs,
    idleTimeoutMillis: 30_000,
    allowExitOnIdle: true, // a CLI command that is done exits, even before close()
    // The client gives up shortly after the server would have: a frozen server or network still
    // ends, and a connection that timed out is destroyed, never reused.
    query_timeout: settings.statementTimeoutMs + 1_000,
    keepAlive: true,
    application_name: 'tokenctl', // the URL's application_name, if any, wins
    types: TYPES,
    // Queries sent on a connection before the last is answered go out at once (pg's pipeline
    // mode): Database.alone sends a transaction's BEGIN, statement and COMMIT in one round trip.
    // Every other caller waits for each answer, as without it.
    pipeline: true,
  };
  // Several hosts (or target_session_attrs): each connection finds the writable one (hosts.ts).
  const pool = new pg.Pool(hosts === undefined ? config : { ...config, Client: writableHostClient(hosts, config) });
  // Idle connections that break (server restart, admin shutdown, network) land here; the pool
  // has already discarded them. Errors of connections in use reach their query instead.
  pool.on('error', () => undefined);
  return pool;
}
