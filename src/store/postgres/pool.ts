import pg from 'pg';

export interface PoolSettings {
  /** Connections in the pool. */
  poolSize: number;
  /** Schema holding the store: becomes the connections' whole search_path. */
  schema?: string;
  /** How long to wait for a connection (a new one, or a free one from a full pool). */
  connectionTimeoutMs: number;
  /** Server-side limit for one statement; the client gives up a little later. */
  statementTimeoutMs: number;
}

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

/** Unquoted identifiers only: the same name in SQL, in search_path and in `options`. */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * The `schema` parameter of a store URL (`postgres://host/db?schema=tokenctl`), if any. pg
 * itself ignores the parameter, so the URL is passed on unchanged.
 */
export function schemaFromUrl(url: string): string | undefined {
  const query = /\?([^#]*)/.exec(url)?.[1];
  return query === undefined ? undefined : (new URLSearchParams(query).get('schema') ?? undefined);
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
 * a hang: connecting, statements (server side), and reading an answer (client side, for a
 * server that vanished without closing the socket).
 */
export function createPool(url: string, settings: PoolSettings): pg.Pool {
  const pool = new pg.Pool({
    ...withSearchPath(url, settings.schema),
    max: settings.poolSize,
    connectionTimeoutMillis: settings.connectionTimeoutMs,
    idleTimeoutMillis: 30_000,
    allowExitOnIdle: true, // a CLI command that is done exits, even before close()
    statement_timeout: settings.statementTimeoutMs,
    // The client gives up shortly after the server would have: a frozen server or network still ends.
    query_timeout: settings.statementTimeoutMs + 1_000,
    // A transaction left open by a vanished client must not hold its row locks for ever.
    idle_in_transaction_session_timeout: settings.statementTimeoutMs * 2,
    keepAlive: true,
    application_name: 'tokenctl', // the URL's application_name, if any, wins
    types: TYPES,
  });
  // Idle connections that break (server restart, admin shutdown, network) land here; the pool
  // has already discarded them. Errors of connections in use reach their query instead.
  pool.on('error', () => undefined);
  return pool;
}

/**
 * The connection settings that put `schema` first and alone on the search_path, through the
 * startup `options` (so every connection has it before its first query). pg lets the URL's own
 * parameters override the config object, so an `options` parameter already in the URL is
 * extended rather than replaced.
 */
function withSearchPath(url: string, schema: string | undefined): pg.PoolConfig {
  if (schema === undefined) return { connectionString: url };
  const setting = `-c search_path=${schema}`;
  const existing = /([?&])options=([^&#]*)/.exec(url);
  if (!existing) return { connectionString: url, options: setting };
  const combined = `${decodeURIComponent(existing[2] ?? '')} ${setting}`;
  return { connectionString: url.replace(existing[0], `${existing[1]}options=${encodeURIComponent(combined)}`) };
}
