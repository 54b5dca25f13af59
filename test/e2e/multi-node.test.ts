import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tokenctl } from '../helpers/cli.js';
import { startServe, stopServe } from '../helpers/load.js';
import { PG_SKIP_MESSAGE, PG_URL, dropSchema, testSchemaName } from '../helpers/pg.js';
import { PGBOUNCER, PGBOUNCER_SKIP_MESSAGE, startPgBouncer, type PgBouncer } from '../helpers/pgbouncer.js';

/**
 * Two `tokenctl serve` processes on one PostgreSQL store, as behind a round-robin load balancer:
 * whatever one node does, the other sees at once, and a rotation raced across both nodes has
 * exactly one winner. Real processes, real sockets; every process is killed in afterAll and
 * every request has a timeout. Run twice: on the server directly, and through a stock PgBouncer
 * in transaction mode (nodes and CLI alike), which refuses session state and startup options.
 */

if (!PG_URL) {
  console.warn(PG_SKIP_MESSAGE);
  it.skip(PG_SKIP_MESSAGE, () => undefined);
}

const ISSUER = 'https://auth.example.test';
const REQUEST_TIMEOUT_MS = 10_000;

/** One running `tokenctl serve`. */
interface ServeNode {
  name: string;
  url: string;
  output(): string;
  stop(): Promise<void>;
}

/** `tokenctl serve` on 127.0.0.1, a free port, plain HTTP (loopback), as node `name`. */
async function startNode(name: string, db: string, extra: string[] = []): Promise<ServeNode> {
  const serve = await startServe(['--db', db, '--node', name, '--issuer', ISSUER, '--log-level', 'warn', ...extra]);
  return { name, url: serve.url, output: () => serve.stdout() + serve.stderr(), stop: () => stopServe(serve) };
}

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

async function post(node: ServeNode, path: string, form: Record<string, string>, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(node.url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form).toString(),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function get(node: ServeNode, path: string): Promise<Answer> {
  const res = await fetch(node.url + path, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

interface Client {
  client_id: string;
  client_secret: string;
}

interface Issued {
  access_token: string;
  refresh_token: string;
  jti: string;
}

/** Spec part 5 scenario I: `Basic base64(client_id ":" base64(password))`. */
function specBasic(c: Client): string {
  return 'Basic ' + Buffer.from(`${c.client_id}:${Buffer.from(c.client_secret).toString('base64')}`).toString('base64');
}

const refresh = (node: ServeNode, c: Client, refreshToken: string) =>
  post(node, '/oauth/token', { grant_type: 'refresh_token', refresh_token: refreshToken }, { authorization: specBasic(c) });
const introspect = (node: ServeNode, c: Client, token: string, hint = 'access_token') =>
  post(node, '/oauth/introspection', { token, token_type_hint: hint, client_id: c.client_id, client_secret: c.client_secret });
const revoke = (node: ServeNode, c: Client, token: string, hint = 'refresh_token') =>
  post(node, '/oauth/revocation', { token, token_type_hint: hint, client_id: c.client_id, client_secret: c.client_secret });

/** Where the nodes and the CLI connect: the database URL to use, and how to stop what was started for it. */
interface Target {
  start(): Promise<string>;
  stop(): Promise<void>;
}

const direct: Target = { start: async () => PG_URL ?? '', stop: async () => undefined };

function throughPgBouncer(): Target {
  let bouncer: PgBouncer | undefined;
  return {
    start: async () => (bouncer = await startPgBouncer(PG_URL ?? '', 'transaction')).url,
    stop: async () => bouncer?.stop(),
  };
}

describeTwoNodes('two serve nodes on one PostgreSQL store', PG_URL !== undefined, direct);
if (PG_URL && !PGBOUNCER) {
  console.warn(PGBOUNCER_SKIP_MESSAGE);
  it.skip(PGBOUNCER_SKIP_MESSAGE, () => undefined);
}
describeTwoNodes('two serve nodes on one PostgreSQL store, through PgBouncer in transaction mode', PG_URL !== undefined && PGBOUNCER !== undefined, throughPgBouncer());

function describeTwoNodes(title: string, enabled: boolean, target: Target): void {
  describe.skipIf(!enabled)(title, () => {
    const schema = testSchemaName();
    let db: string;
    let home: string;
    let a: ServeNode;
    let b: ServeNode;
    let client: Client;

    /** Runs a tokenctl command on the shared store and returns its JSON output. */
    async function cli<T>(args: string[]): Promise<T> {
      const r = await tokenctl([...args, '--db', db, '--json'], { timeoutMs: 20_000 });
      expect(r.code, r.stderr).toBe(0);
      return r.json<T>();
    }
    const issue = (user: string) => cli<Issued>(['token', 'issue', '--client', client.client_id, '--user', user]);

    beforeAll(async () => {
      const base = await target.start();
      db = `${base}${base.includes('?') ? '&' : '?'}schema=${schema}`;
      home = mkdtempSync(join(tmpdir(), 'tokenctl-nodes-'));
      // The client first: creating it also creates the schema, before two nodes race to.
      client = await cli<Client>(['client', 'create', '--name', 'shop', '--scope', 'read write']);
      // Same --db, same --issuer, same rotation setting; only --node differs.
      [a, b] = await Promise.all([startNode('node-a', db, ['--rotate-refresh-tokens']), startNode('node-b', db, ['--rotate-refresh-tokens'])]);
    }, 60_000);

    afterAll(async () => {
      await Promise.all([a?.stop(), b?.stop()]);
      await target.stop();
      if (PG_URL) await dropSchema(PG_URL, schema);
      rmSync(home, { recursive: true, force: true });
    }, 30_000);

    it('both nodes are healthy and name the same issuer', async () => {
      for (const node of [a, b]) {
        expect(await get(node, '/healthz')).toEqual({ status: 200, body: { status: 'ok' } });
        expect((await get(node, '/.well-known/oauth-authorization-server')).body.issuer).toBe(ISSUER);
      }
    });

    it('a token issued by the CLI is refreshed through node B, and node A serves the result', async () => {
      const issued = await issue('alice');
      const r = await refresh(b, client, issued.refresh_token);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body).toMatchObject({ node: 'node-b', token_type: 'bearer', scope: 'read write' });
      expect(r.body.refresh_token).not.toBe(issued.refresh_token); // rotated

      const seenByA = await introspect(a, client, r.body.access_token as string);
      expect(seenByA.body).toMatchObject({ active: true, client_id: client.client_id, username: 'alice', jti: r.body.jti, iss: ISSUER });
      // The replaced refresh token is inactive on both nodes, the new one active on both.
      for (const node of [a, b]) {
        expect((await introspect(node, client, issued.refresh_token, 'refresh_token')).body).toEqual({ active: false });
        expect((await introspect(node, client, r.body.refresh_token as string, 'refresh_token')).body).toMatchObject({ active: true });
      }
    });

    it('a revocation on node A is seen by node B at once', async () => {
      const issued = await issue('bob');
      expect((await introspect(b, client, issued.access_token)).body).toMatchObject({ active: true });
      expect((await revoke(a, client, issued.refresh_token)).body).toMatchObject({ code: 'token_revoke_success' });
      // No wait: B answers from the store, never from a cache.
      expect((await introspect(b, client, issued.access_token)).body).toEqual({ active: false });
      expect((await introspect(b, client, issued.refresh_token, 'refresh_token')).body).toEqual({ active: false });
      expect((await revoke(b, client, issued.refresh_token)).body).toMatchObject({ code: 'token_already_revoked' });
      const refused = await refresh(b, client, issued.refresh_token);
      expect(refused.status).toBe(401);
      expect(refused.body.error).toBe('invalid_token');
    });

    it('a client created while the nodes run is known to both, and its secret rotation ends the old one on both', async () => {
      const late = await cli<Client>(['client', 'create', '--name', 'late', '--scope', 'read']);
      const issued = await cli<Issued>(['token', 'issue', '--client', late.client_id, '--user', 'carol']);
      for (const node of [a, b]) expect((await introspect(node, late, issued.access_token)).body).toMatchObject({ active: true });
      const rotated = await cli<{ client_secret: string }>(['client', 'rotate-secret', late.client_id, '--yes']);
      for (const node of [a, b]) {
        expect((await introspect(node, late, issued.access_token)).status).toBe(401);
        expect((await introspect(node, { ...late, client_secret: rotated.client_secret }, issued.access_token)).body).toMatchObject({ active: true });
      }
    });

    it('concurrent rotations of one refresh token, split across both nodes: exactly one 200', async () => {
      for (let round = 0; round < 3; round++) {
        const issued = await issue(`racer-${round}`);
        const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => refresh(i % 2 === 0 ? a : b, client, issued.refresh_token)));
        const ok = answers.filter((r) => r.status === 200);
        expect(ok, JSON.stringify(answers.map((r) => r.status))).toHaveLength(1);
        expect(['node-a', 'node-b']).toContain(ok[0]!.body.node);
        for (const r of answers.filter((x) => x.status !== 200)) {
          expect(r.status).toBe(401);
          expect(r.body.error).toBe('invalid_token');
        }
      }
    }, 60_000);
  });
}
