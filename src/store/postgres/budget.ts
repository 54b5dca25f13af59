import pg from 'pg';
import { redactUrl } from './errors.js';
import { hostListOf, writableHostClient } from './hosts.js';

/**
 * The server's connection budget, as `serve` checks it at start: PostgreSQL refuses connections
 * past `max_connections` (less those reserved for superusers), and then every node's requests
 * that need a new connection get 503, and an operator's CLI cannot connect at all.
 */
export interface ConnectionBudget {
  /** `SHOW max_connections`. */
  maxConnections: number;
  /** Reserved for superusers (and, from PostgreSQL 16, for roles granted pg_use_reserved_connections). */
  reserved: number;
  /** Client connections open now (pg_stat_activity), this check's own included. */
  inUse: number;
  /** Of those, the ones named `tokenctl` (every tokenctl pool's application_name). */
  tokenctl: number;
  /**
   * Whether the connection reached the server through something listening on another port
   * (PgBouncer, typically): then the nodes' pools are the pooler's clients, not the server's.
   */
  behindPooler: boolean;
}

/** Reads the budget over one short-lived connection (no startup options, so a pooler lets it through). */
export async function readConnectionBudget(url: string, timeoutMs = 3_000): Promise<ConnectionBudget> {
  const hosts = hostListOf(url);
  const config = { connectionString: hosts?.firstUrl ?? url, connectionTimeoutMillis: timeoutMs, query_timeout: timeoutMs, application_name: 'tokenctl' };
  // With several hosts, the one the store writes to (hosts.ts).
  const client = hosts === undefined ? new pg.Client(config) : new (writableHostClient(hosts, config))(config);
  client.on('error', () => undefined);
  await client.connect();
  try {
    const { rows } = await client.query<{ max: string; reserved: string; in_use: string; tokenctl: string; port: number | null }>(
      `SELECT current_setting('max_connections') AS max,
          current_setting('superuser_reserved_connections')::int + coalesce(current_setting('reserved_connections', true), '0')::int AS reserved,
          (SELECT count(*) FROM pg_catalog.pg_stat_activity WHERE backend_type = 'client backend') AS in_use,
          (SELECT count(*) FROM pg_catalog.pg_stat_activity WHERE backend_type = 'client backend' AND application_name = 'tokenctl') AS tokenctl,
          inet_server_port() AS port`,
    );
    const row = rows[0]!;
    return {
      maxConnections: Number(row.max),
      reserved: Number(row.reserved),
      inUse: Number(row.in_use),
      tokenctl: Number(row.tokenctl),
      behindPooler: row.port !== null && Number(row.port) !== (hosts === undefined ? portOf(url) : client.port),
    };
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The port a URL names (PostgreSQL's 5432 when none, or for a URL `new URL` cannot read, such as a socket path's). */
function portOf(url: string): number {
  try {
    return Number(new URL(url).port || 5432);
  } catch {
    return 5432;
  }
}

function connections(n: number): string {
  return n === 1 ? '1 connection' : `${n} connections`;
}

/** Warn once the connections open, plus those this node may open, pass this share of what is usable. */
export const BUDGET_WARNING_SHARE = 0.9;

/**
 * What `serve` should say about the budget, or undefined when it is comfortable. `planned` is
 * how many connections this node may open (pool size × processes). A snapshot: nodes started
 * later, and pools that grow under load, come on top.
 */
export function budgetWarning(budget: ConnectionBudget, planned: number, url: string): string | undefined {
  const usable = budget.maxConnections - budget.reserved;
  const limit = Math.floor(usable * BUDGET_WARNING_SHARE);
  const where = `PostgreSQL at ${redactUrl(url)}`;
  const advice = 'see "Connection budget" in docs/scale-out.md';
  if (budget.behindPooler) {
    if (budget.inUse <= limit) return undefined;
    return `${where}: ${budget.inUse} of its ${usable} usable connections (max_connections ${budget.maxConnections}, ${budget.reserved} reserved) are open; lower the pooler's pool size or raise max_connections, or an operator's CLI may not get in (${advice})`;
  }
  // The check's own connection is counted in inUse, and goes away.
  const projected = budget.inUse - 1 + planned;
  if (projected <= limit) return undefined;
  return (
    `${where}: ${connections(budget.inUse - 1)} open now (${Math.max(0, budget.tokenctl - 1)} of them tokenctl's) and this node may open up to ${planned} more, ` +
    `${projected} of the ${usable} usable (max_connections ${budget.maxConnections}, ${budget.reserved} reserved); past that, requests get 503 and ` +
    `an operator's CLI cannot connect. Lower --pool-size, put PgBouncer in front, or raise max_connections (${advice})`
  );
}
