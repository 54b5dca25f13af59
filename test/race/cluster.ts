import { join } from 'node:path';
import { Engine } from '../../src/engine/engine.js';
import { buildSpecAuthorization } from '../../src/engine/client-auth.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import type { TokenStore } from '../../src/store/store.js';
import { dropSchema, testSchemaName, withPg } from '../helpers/pg.js';
import { postForm, type Reply } from '../helpers/form-post.js';
import { startServe, stopServe, tempDir, type ServeProcess } from '../helpers/load.js';

export type { Reply };

/**
 * The real thing to race: several `tokenctl serve` processes on one store, and the test process
 * beside them with a connection of its own (as a CLI command or another node would be). Every
 * guarantee of "a revocation is final" is checked against this, never against one process.
 */

export type Backend = 'sqlite' | 'postgres' | 'postgres-serializable' | 'postgres-repeatable-read';

export interface Cluster {
  backend: Backend;
  /** Base URLs of the serve nodes. */
  nodes: string[];
  /** The store as the test process sees it (its own connection, or its own pool). */
  store: TokenStore;
  /** An engine on `store`, with the system clock: issues grants as a login would. */
  engine: Engine;
  /** `--db` of the nodes, for CLI commands on the same store. */
  db: string;
  clientId: string;
  /** The spec's Authorization header of the race client (scenario I). */
  authorization: string;
  /** Form credentials of the race client (spec part 5, revocation and introspection). */
  form: Record<string, string>;
  /** Stops every node and closes and removes the store. */
  close(): Promise<void>;
}

/**
 * Roles whose transactions default to another level than PostgreSQL's READ COMMITTED, so that the
 * shared server's own default stays untouched: SERIALIZABLE, the stand-in for a distributed SQL
 * engine (the store is configured for it with `?isolation=serializable`), and REPEATABLE READ, a
 * DBA's or YugabyteDB's default, which the store must override without being told.
 */
const ROLES = {
  'postgres-serializable': { role: 'tokenctl_race_serializable', level: 'serializable', urlParameter: 'isolation=serializable' },
  'postgres-repeatable-read': { role: 'tokenctl_race_repeatable_read', level: 'repeatable read', urlParameter: undefined },
} as const;

export async function startCluster(backend: Backend, options: { nodes: number; rotate: boolean; pgUrl?: string }): Promise<Cluster> {
  const cleanups: (() => Promise<void>)[] = [];
  try {
    let store: TokenStore;
    let db: string;
    if (backend === 'sqlite') {
      const tmp = tempDir('tokenctl-race-');
      cleanups.push(async () => tmp.cleanup());
      db = join(tmp.dir, 'race.db');
      store = await SqliteStore.open(db);
    } else {
      const url = options.pgUrl!;
      const schema = testSchemaName();
      cleanups.push(() => dropSchema(url, schema));
      // The schema is made by the ordinary role; the nodes and the test's own connections then
      // use a role whose transactions default to the backend's level, without any startup
      // parameter (the way a CockroachDB or YugabyteDB user would run it).
      const nodeUrl = backend === 'postgres' ? url : await roleUrl(url, backend);
      const parameters = [`schema=${schema}`, ...(backend === 'postgres' || ROLES[backend].urlParameter === undefined ? [] : [ROLES[backend].urlParameter])];
      db = `${nodeUrl}${nodeUrl.includes('?') ? '&' : '?'}${parameters.join('&')}`;
      await (await PostgresStore.open(url, { schema })).close();
      // The test's own store acts as the operator's command (the bulk revocations): the CLI's
      // retry budget, 30 s, not a request's 2 s (base-command.ts), as `tokenctl revoke` has.
      store = await PostgresStore.open(db, { poolSize: 8, retryBudgetMs: 30_000 });
    }
    cleanups.push(() => store.close());
    const engine = new Engine({ store, rotateRefreshTokens: options.rotate });
    const { client, client_secret } = await engine.createClient({ name: 'race', id: 'race-client' }, 'test');
    const secret = client_secret!;
    const serves: ServeProcess[] = [];
    cleanups.push(async () => {
      await Promise.all(serves.map((s) => stopServe(s)));
    });
    const args = (i: number) => ['--db', db, '--node', `node-${i}`, '--log-level', 'warn', ...(options.rotate ? ['--rotate-refresh-tokens'] : [])];
    for (let i = 0; i < options.nodes; i++) serves.push(await startServe(args(i)));
    const cluster: Cluster = {
      backend,
      nodes: serves.map((s) => s.url),
      store,
      engine,
      db,
      clientId: client.client_id,
      authorization: buildSpecAuthorization(client.client_id, secret),
      form: { client_id: client.client_id, client_secret: secret },
      close: async () => {
        for (const c of cleanups.reverse()) await c().catch(() => undefined);
      },
    };
    // Every node verifies the secret once (scrypt) before the races, so that they are not serialised behind it.
    await Promise.all(cluster.nodes.map((node) => post(node, '/oauth/introspection', { token: 'x', ...cluster.form })));
    return cluster;
  } catch (error) {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
    throw error;
  }
}

/** `url` as the backend's role, made (once) with its default isolation level. */
async function roleUrl(url: string, backend: keyof typeof ROLES): Promise<string> {
  const { role, level } = ROLES[backend];
  await withPg(url, undefined, async (db) => {
    await db.query(`DO $$ BEGIN
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '${role}') THEN
          CREATE ROLE ${role} LOGIN SUPERUSER;
        END IF;
      END $$`);
    await db.query(`ALTER ROLE ${role} SET default_transaction_isolation = '${level}'`);
  });
  const u = new URL(url);
  u.username = role;
  u.password = '';
  return u.toString();
}

/** The default isolation level of the cluster's role: what a transaction that names none would run at. */
export async function defaultIsolationOf(cluster: Cluster, pgUrl: string): Promise<string> {
  const url = cluster.backend === 'postgres' || cluster.backend === 'sqlite' ? pgUrl : await roleUrl(pgUrl, cluster.backend);
  return withPg(url, undefined, async (db) => (await db.query<{ level: string }>("SELECT current_setting('default_transaction_isolation') AS level")).rows[0]!.level);
}

/** The level a transaction of the cluster's store really runs at (the test process's own store, opened with the nodes' URL). */
export async function storeIsolationOf(cluster: Cluster): Promise<string> {
  const db = (cluster.store as unknown as { db: { transaction<T>(work: (tx: { query(sql: string): Promise<{ rows: { level: string }[] }> }) => Promise<T>): Promise<T> } }).db;
  return db.transaction(async (tx) => (await tx.query("SELECT current_setting('transaction_isolation') AS level")).rows[0]!.level);
}

/** One form POST; a network failure is status 0 (counted, never thrown). */
export function post(base: string, path: string, form: Record<string, string>, headers: Record<string, string> = {}): Promise<Reply> {
  return postForm(base + path, form, headers);
}

export function refreshAt(cluster: Cluster, node: number, refreshToken: string): Promise<Reply> {
  return post(cluster.nodes[node % cluster.nodes.length]!, '/oauth/token', { grant_type: 'refresh_token', refresh_token: refreshToken }, { authorization: cluster.authorization });
}

export function revokeAt(cluster: Cluster, node: number, token: string): Promise<Reply> {
  return post(cluster.nodes[node % cluster.nodes.length]!, '/oauth/revocation', { token, token_type_hint: 'refresh_token', ...cluster.form });
}

export function introspectAt(cluster: Cluster, node: number, token: string): Promise<Reply> {
  return post(cluster.nodes[node % cluster.nodes.length]!, '/oauth/introspection', { token, token_type_hint: 'access_token', ...cluster.form });
}

/** Tokens of `username` that are active now, as the store says. */
export async function activeOf(cluster: Cluster, username: string): Promise<number> {
  return (await cluster.store.listTokens({ username, state: 'active', now: Date.now() })).length;
}

/** Tallies of what a race's requests got, for the report and for the no-500 assertion. */
export class Tally {
  readonly statuses = new Map<number, number>();
  add(reply: Reply): Reply {
    this.statuses.set(reply.status, (this.statuses.get(reply.status) ?? 0) + 1);
    return reply;
  }
  count(status: number): number {
    return this.statuses.get(status) ?? 0;
  }
  toString(): string {
    return [...this.statuses].map(([s, n]) => `${s}×${n}`).join(' ');
  }
}

/** Rounds of each race: TOKENCTL_RACE_ROUNDS (a soak run sets 1000), default `fallback`. */
export function roundsOf(fallback: number): number {
  const n = Number(process.env.TOKENCTL_RACE_ROUNDS ?? fallback);
  return Number.isInteger(n) && n > 0 ? n : fallback;
}

/** Runs `round(i)` for i < count, `wave` of them at a time. */
export async function inWaves(count: number, wave: number, round: (i: number) => Promise<void>): Promise<void> {
  for (let start = 0; start < count; start += wave) {
    await Promise.all(Array.from({ length: Math.min(wave, count - start) }, (_, k) => round(start + k)));
  }
}
