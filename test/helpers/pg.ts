import { randomBytes } from 'node:crypto';
import net from 'node:net';
import pg from 'pg';
import { PostgresStore, type PostgresStoreOptions } from '../../src/store/postgres/store.js';

/**
 * PostgreSQL for tests: the server named by TOKENCTL_TEST_PG, or none (the tests skip). Every
 * store lives in a schema of its own, so test files and parallel runs never see each other's
 * rows, and cleanup is one DROP SCHEMA.
 */
export const PG_URL = process.env.TOKENCTL_TEST_PG || undefined;

export const PG_SKIP_MESSAGE = 'PostgreSQL tests skipped: set TOKENCTL_TEST_PG=postgres://user@host:5432/db to run them';

/** A schema name no one else uses: `tokenctl_test_<random>`. */
export function testSchemaName(): string {
  return `tokenctl_test_${randomBytes(6).toString('hex')}`;
}

/** Runs `work` on a connection of its own (not the store's pool), with `schema` first on its search_path. */
export async function withPg<T>(url: string, schema: string | undefined, work: (db: pg.Client) => Promise<T>): Promise<T> {
  const db = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  await db.connect();
  try {
    if (schema !== undefined) await db.query(`SET search_path TO "${schema}"`);
    return await work(db);
  } finally {
    await db.end();
  }
}

export async function dropSchema(url: string, schema: string): Promise<void> {
  await withPg(url, undefined, (db) => db.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
}

/** A store in a fresh schema, and the cleanup that closes it and drops the schema. */
export async function openTestStore(
  url: string,
  options: PostgresStoreOptions = {},
): Promise<{ store: PostgresStore; schema: string; cleanup: () => Promise<void> }> {
  const schema = options.schema ?? testSchemaName();
  let store: PostgresStore;
  try {
    store = await PostgresStore.open(url, { ...options, schema });
  } catch (error) {
    await dropSchema(url, schema);
    throw error;
  }
  return {
    store,
    schema,
    cleanup: async () => {
      await store.close();
      await dropSchema(url, schema);
    },
  };
}

export interface GrantSeries {
  /** How many grants: each one refresh token and one access token. */
  grants: number;
  clientId: string;
  username: string;
  /** Issue time (ms); every token is valid for a day after it. */
  issuedAt: number;
  /** Prefix of every jti, digest and grant id, so that series never collide. */
  prefix: string;
}

/**
 * Inserts `grants` refresh/access pairs (and their grant rows) in one statement over generate_series: a
 * hundred thousand tokens in one round trip, independently of the store's own insert path.
 */
export async function insertGrantSeries(url: string, schema: string, s: GrantSeries): Promise<number> {
  return withPg(url, schema, async (db) => {
    const result = await db.query(
      `WITH g AS (INSERT INTO grants (grant_id, client_id, username, created_at)
          SELECT $1 || 'grant-' || i, $2, $3, $4::bigint FROM generate_series(1, $5::int) AS i)
        INSERT INTO tokens (jti, digest, type, grant_id, client_id, username, sub, scope, audience, org_id, node,
          issued_at, not_before, expires_at, revoked_at, replaced_at, replaced_by)
        SELECT $1 || kind || '-' || i, 'digest-' || $1 || kind || '-' || i, kind || '_token', $1 || 'grant-' || i, $2, $3, $3,
          'read', 'https://api.example.test', 'org-1', 'node-1', $4::bigint, $4::bigint, $4::bigint + 86400000, NULL, NULL, NULL
        FROM generate_series(1, $5::int) AS i CROSS JOIN (VALUES ('refresh'), ('access')) AS k (kind)`,
      [s.prefix, s.clientId, s.username, s.issuedAt, s.grants],
    );
    return result.rowCount ?? 0;
  });
}

/**
 * A TCP proxy in front of the database that the test can take down and bring back on the same
 * port: the database "going away" (every connection cut, new ones refused) without touching the
 * shared server.
 */
export class TcpProxy {
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  private readonly pairs = new Set<[net.Socket, net.Socket]>();
  private holing = false;
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  /** Listens (on a free port the first time, on the same one afterwards). */
  async start(): Promise<void> {
    const server = net.createServer((client) => {
      this.sockets.add(client);
      client.on('close', () => this.sockets.delete(client));
      if (this.holing) {
        client.on('error', () => undefined); // accepted, and never a byte either way
        return;
      }
      const upstream = net.connect(this.targetPort, this.targetHost);
      const pair: [net.Socket, net.Socket] = [client, upstream];
      this.pairs.add(pair);
      this.sockets.add(upstream);
      upstream.on('close', () => (this.sockets.delete(upstream), this.pairs.delete(pair)));
      for (const s of pair) s.on('error', () => (s === client ? upstream : client).destroy());
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as net.AddressInfo).port;
    this.server = server;
  }

  /** Cuts every connection and stops listening: connecting is refused until start(). */
  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /**
   * A black hole: connections open stay open but carry nothing more either way, and new ones are
   * accepted and never answered, as a network partition that drops packets looks to a client.
   */
  blackHole(): void {
    this.holing = true;
    for (const [client, upstream] of this.pairs) {
      client.unpipe(upstream);
      upstream.unpipe(client);
      client.pause();
      upstream.pause();
    }
  }

  /** Ends the black hole: every connection it held is cut (as a partition's end finds them), new ones pass again. */
  heal(): void {
    this.holing = false;
    for (const s of this.sockets) s.destroy();
  }

  /** `url` with its host and port replaced by the proxy's. */
  rewrite(url: string): string {
    const u = new URL(url);
    u.hostname = '127.0.0.1';
    u.port = String(this.port);
    return u.toString();
  }
}

/** A server that accepts connections and never says a word: what a hung database looks like. */
export async function startSilentServer(): Promise<{ port: number; close: () => Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
