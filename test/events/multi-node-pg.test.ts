import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tokenctl } from '../helpers/cli.js';
import { startServe, stopServe, type ServeProcess } from '../helpers/load.js';
import { LEASE_MS } from '../../src/events/deliverer.js';
import { PG_SKIP_MESSAGE, PG_URL, dropSchema, testSchemaName, withPg } from '../helpers/pg.js';
import { allSettled, revocationsOf, TestReceiver, verifySets } from './receiver.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Three `tokenctl serve` nodes on one PostgreSQL store and one push receiver: revocations on
 * random nodes, each event delivered once, by whichever node holds the receiver's lease (0
 * duplicates, 0 missing). Real processes, a real HTTPS receiver.
 */
if (!PG_URL) {
  console.warn(PG_SKIP_MESSAGE);
  it.skip(PG_SKIP_MESSAGE, () => undefined);
}

const NODES = 3;
const REVOCATIONS = 60;

describe.runIf(PG_URL)('push from 3 nodes on PostgreSQL', () => {
  const schema = testSchemaName();
  const db = `${PG_URL}${(PG_URL ?? '').includes('?') ? '&' : '?'}schema=${schema}`;
  const dir = mkdtempSync(join(tmpdir(), 'tokenctl-events-pg-'));
  let nodes: ServeProcess[] = [];
  let receiver: TestReceiver;
  let client: { id: string; secret: string };

  const cli = async <T>(args: string[], env: Record<string, string> = {}): Promise<T> => {
    const r = await tokenctl([...args, '--db', db, '--json'], { timeoutMs: 20_000, env });
    if (r.code !== 0) throw new Error(`tokenctl ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
    return r.json<T>();
  };

  beforeAll(async () => {
    receiver = await TestReceiver.start(dir);
    const c = await cli<{ client_id: string; client_secret: string }>(['client', 'create', '--name', 'app']);
    client = { id: c.client_id, secret: c.client_secret };
    await cli(['receiver', 'add', 'gw', '--push', receiver.url, '--ca', receiver.caFile, '--allow-private-network']);
    nodes = await Promise.all(Array.from({ length: NODES }, (_, i) => startServe(['--db', db, '--node', `node-${i}`, '--issuer', 'https://auth.example.test', '--log-level', 'warn'])));
  }, 60_000);

  afterAll(async () => {
    await Promise.all(nodes.map((n) => stopServe(n).catch(() => undefined)));
    await receiver?.down();
    rmSync(dir, { recursive: true, force: true });
    if (PG_URL) await dropSchema(PG_URL, schema);
  });

  it(`${REVOCATIONS} revocations on random nodes: each event delivered exactly once`, async () => {
    // Tokens issued up front (the CLI), revoked through the nodes' revocation endpoints.
    const issued = await cli<{ access_token: string; jti: string }[]>(['token', 'issue', '--client', client.id, '--user', 'alice', '--count', String(REVOCATIONS)]);
    expect(issued).toHaveLength(REVOCATIONS);
    const order: string[] = [];
    // Four at a time, each on a random node.
    let next = 0;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (next < issued.length) {
          const t = issued[next++]!;
          const node = nodes[Math.floor(Math.random() * nodes.length)]!;
          const res = await fetch(`${node.url}/oauth/revocation`, {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams({ client_id: client.id, client_secret: client.secret, token: t.access_token }).toString(),
            signal: AbortSignal.timeout(10_000),
          });
          expect(res.status).toBe(200);
          order.push(t.jti);
        }
      }),
    );
    // However the nodes merged them into SETs (docs/events.md "Push").
    await receiver.waitForRevocations(REVOCATIONS, 30_000);
    await allSettled(() => cli(['receiver', 'list']));
    const claims = await verifySets(nodes[0]!.url, receiver.accepted);
    const subjects = revocationsOf(claims).map((r) => r.jti as string);
    expect(new Set(subjects).size).toBe(REVOCATIONS);
    expect(receiver.duplicates()).toBe(0);
    expect([...subjects].sort()).toEqual([...order].sort());
    const listed = await cli<{ pending: number; dead: number }[]>(['receiver', 'list']);
    expect(listed[0]).toMatchObject({ pending: 0, dead: 0 });
  }, 90_000);
});

describe.runIf(PG_URL)('a node killed while it pushes, on PostgreSQL', () => {
  const schema = testSchemaName();
  const db = `${PG_URL}${(PG_URL ?? '').includes('?') ? '&' : '?'}schema=${schema}`;
  const dir = mkdtempSync(join(tmpdir(), 'tokenctl-events-pg-'));
  const nodes: ServeProcess[] = [];
  let receiver: TestReceiver;

  const cli = async <T>(args: string[]): Promise<T> => {
    const r = await tokenctl([...args, '--db', db, '--json'], { timeoutMs: 20_000 });
    if (r.code !== 0) throw new Error(`tokenctl ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
    return r.json<T>();
  };
  const start = async (name: string) => {
    const node = await startServe(['--db', db, '--node', name, '--issuer', 'https://auth.example.test', '--log-level', 'warn']);
    nodes.push(node);
    return node;
  };

  afterAll(async () => {
    await Promise.all(nodes.map((n) => stopServe(n).catch(() => undefined)));
    await receiver?.down();
    rmSync(dir, { recursive: true, force: true });
    if (PG_URL) await dropSchema(PG_URL, schema);
  });

  it('the other node delivers the event once the dead node\'s lease ends', async () => {
    receiver = await TestReceiver.start(dir);
    receiver.holdMs = 60_000;
    const c = await cli<{ client_id: string }>(['client', 'create', '--name', 'app']);
    await cli(['receiver', 'add', 'gw', '--push', receiver.url, '--ca', receiver.caFile, '--allow-private-network']);
    const a = await start('node-a');
    const t = await cli<{ access_token: string; jti: string }>(['token', 'issue', '--client', c.client_id, '--user', 'alice']);
    await cli(['revoke', t.access_token]);
    // node-a holds the receiver's lease and waits for its answer: now a second node comes, and node-a dies.
    const until = Date.now() + 10_000;
    while (receiver.arrived === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    expect(receiver.arrived).toBe(1);
    const b = await start('node-b');
    receiver.holdMs = 0;
    await a.kill('SIGKILL');
    // The dead node's lease as it stands a lease later, rather than waited out in real time.
    await withPg(PG_URL!, schema, (pg) => pg.query('UPDATE receiver_leases SET lease_until = lease_until - $1 WHERE receiver_id = $2 AND lease_until > 0', [LEASE_MS, 'gw']));
    await receiver.waitFor(1, 45_000);
    expect(receiver.accepted).toHaveLength(1);
    const claims = await verifySets(b.url, receiver.accepted);
    expect(revocationsOf(claims).map((r) => r.jti)).toEqual([t.jti]);
    expect(claims[0]!.sub_id.id).toBe(t.jti);
    expect((await cli<{ pending: number }[]>(['receiver', 'list']))[0]).toMatchObject({ pending: 0 });
  }, 90_000);
});
