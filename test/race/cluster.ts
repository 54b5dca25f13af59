import { join } from 'node:path';
import { Engine } from '../../src/engine/engine.js';
import { buildSpecAuthorization } from '../../src/engine/client-auth.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import type { TokenStore } from '../../src/store/store.js';
import { dropSchema, testSchemaName, withPg } from '../helpers/pg.js';
import { startServe, stopServe, tempDir, type ServeProcess } from '../helpers/load.js';

/**
 * The real thing to race: several `tokenctl serve` processes on one store, and the test process
 * beside them with a connection of its own (as a CLI command or another node would be). Every
 * guarantee of "a revocation is final" is checked against this, never against one process.
 */

export type Backend = 'sqlite' | 'postgres' | 'postgres-serializable';

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

/** A role whose transactions are SERIALIZABLE by default: the stand-in for a distributed SQL engine. */
const SERIALIZABLE_ROLE = 'tokenctl_race_serializable';

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
      // The schema is made by the ordinary role; at SERIALIZABLE the nodes and the test's own
      // connections then use a role whose every transaction is serializable, without any startup
      // parameter (the way a CockroachDB user would run it).
      const nodeUrl = backend === 'postgres' ? url : await serializableUrl(url);
      db = `${nodeUrl}${nodeUrl.includes('?') ? '&' : '?'}schema=${schema}`;
      await (await PostgresStore.open(url, { schema })).close();
      store = await PostgresStore.open(db, { poolSize: 8 });
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

async function serializableUrl(url: string): Promise<string> {
  await withPg(url, undefined, async (db) => {
    await db.query(`DO $$ BEGIN
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '${SERIALIZABLE_ROLE}') THEN
          CREATE ROLE ${SERIALIZABLE_ROLE} LOGIN SUPERUSER;
        END IF;
      END $$`);
    await db.query(`ALTER ROLE ${SERIALIZABLE_ROLE} SET default_transaction_isolation = 'serializable'`);
  });
  const u = new URL(url);
  u.username = SERIALIZABLE_ROLE;
  u.password = '';
  return u.toString();
}

/** Proves that a connection of the cluster's store really runs at the isolation level it claims. */
export async function isolationOf(cluster: Cluster, pgUrl: string): Promise<string> {
  const url = cluster.backend === 'postgres-serializable' ? await serializableUrl(pgUrl) : pgUrl;
  return withPg(url, undefined, async (db) => (await db.query<{ level: string }>("SELECT current_setting('default_transaction_isolation') AS level")).rows[0]!.level);
}

export interface Reply {
  status: number;
  body: Record<string, unknown>;
}

/** One form POST; a network failure is status 0 (counted, never thrown). */
export async function post(base: string, path: string, form: Record<string, string>, headers: Record<string, string> = {}): Promise<Reply> {
  try {
    const res = await fetch(base + path, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(form).toString(),
    });
    const text = await res.text();
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(text) as Record<string, unknown>;
    } catch {
      body = { text };
    }
    return { status: res.status, body };
  } catch (error) {
    return { status: 0, body: { error: String(error) } };
  }
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
