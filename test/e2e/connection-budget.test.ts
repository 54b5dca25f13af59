import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tokenctl } from '../helpers/cli.js';
import { startServe, stopServe, type ServeProcess } from '../helpers/load.js';
import { PG_SKIP_MESSAGE, PG_URL, dropSchema, testSchemaName, withPg } from '../helpers/pg.js';

/**
 * `tokenctl serve` on PostgreSQL checks the server's connection budget as it starts: a pool that
 * would bring the server near max_connections gets a warning on stderr, naming what to change;
 * the default pool does not. And when the nodes' connections are all taken, an operator's CLI
 * still gets in to revoke, as docs/scale-out.md sets it up: the nodes under a role of their own
 * with a CONNECTION LIMIT, the operator under another.
 */

if (!PG_URL) {
  console.warn(PG_SKIP_MESSAGE);
  it.skip(PG_SKIP_MESSAGE, () => undefined);
}

describe.skipIf(!PG_URL)('serve: the connection budget warning', () => {
  const schema = testSchemaName();
  const db = `${PG_URL}${PG_URL?.includes('?') ? '&' : '?'}schema=${schema}`;
  const started: ServeProcess[] = [];
  afterAll(async () => {
    for (const s of started) await stopServe(s);
    if (PG_URL) await dropSchema(PG_URL, schema);
  }, 30_000);

  const serve = async (extra: string[]) => {
    const s = await startServe(['--db', db, '--log-level', 'warn', ...extra]);
    started.push(s);
    return s;
  };

  /** stderr without oclif's warning decoration and line wrapping. */
  const warnings = (s: ServeProcess) => s.stderr().replace(/\s*›\s*/g, ' ').replace(/\s+/g, ' ');

  it('warns when --pool-size would take nearly all of max_connections', async () => {
    const s = await serve(['--pool-size', '95']);
    expect(warnings(s)).toMatch(/this node may open up to 95 more, \d+ of the \d+ usable \(max_connections \d+, \d+ reserved\)/);
    expect(warnings(s)).toContain('Lower --pool-size, put PgBouncer in front, or raise max_connections');
    expect(s.stdout()).toContain('listening on'); // a warning, not a refusal
  });

  it('says nothing about it with the default pool', async () => {
    const s = await serve([]);
    expect(s.stdout()).toContain('listening on');
    expect(s.stderr()).not.toMatch(/max_connections/);
  });
});

describe.skipIf(!PG_URL)('serve: the nodes fenced by a role connection limit, the operator still gets in', () => {
  const url = PG_URL ?? '';
  const schema = testSchemaName();
  const role = `${schema}_node`; // unique, like the schema; a role is global to the server, so dropped after
  const LIMIT = 2;
  const opsDb = `${url}${url.includes('?') ? '&' : '?'}schema=${schema}`;
  let node: ServeProcess | undefined;
  let client: { client_id: string; client_secret: string };

  const cli = async <T>(args: string[]): Promise<T> => {
    const r = await tokenctl([...args, '--db', opsDb, '--json'], { timeoutMs: 20_000 });
    expect(r.code, r.stderr).toBe(0);
    return r.json<T>();
  };
  const introspect = async (token: string) => {
    const res = await fetch(`${node!.url}/oauth/introspection`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token, token_type_hint: 'access_token', client_id: client.client_id, client_secret: client.client_secret }).toString(),
      signal: AbortSignal.timeout(10_000),
    });
    return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as Record<string, unknown> };
  };

  beforeAll(async () => {
    // The operator (the test's own role) creates the store; the nodes' role may use it, on at most LIMIT connections.
    client = await cli(['client', 'create', '--name', 'shop', '--scope', 'read']);
    await withPg(url, undefined, (db) =>
      db.query(`CREATE ROLE "${role}" LOGIN CONNECTION LIMIT ${LIMIT}; GRANT USAGE ON SCHEMA "${schema}" TO "${role}";
        GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "${schema}" TO "${role}";
        GRANT USAGE ON ALL SEQUENCES IN SCHEMA "${schema}" TO "${role}"`),
    );
    const nodeUrl = new URL(url);
    nodeUrl.username = role;
    nodeUrl.searchParams.set('schema', schema);
    // A pool four times what the role may open: the misconfiguration the limit fences.
    node = await startServe(['--db', nodeUrl.toString(), '--pool-size', String(4 * LIMIT), '--log-level', 'warn']);
  }, 60_000);

  afterAll(async () => {
    if (node) await stopServe(node);
    await dropSchema(url, schema);
    await withPg(url, undefined, (db) => db.query(`DROP OWNED BY "${role}"; DROP ROLE IF EXISTS "${role}"`)).catch(() => undefined);
  }, 30_000);

  it('answers 503 with Retry-After (never 500) past the limit, while the operator revokes from the CLI', async () => {
    const issued = await cli<{ access_token: string }>(['token', 'issue', '--client', client.client_id, '--user', 'alice']);
    // Enough requests at once that the node's pool wants more connections than its role may have.
    const answers = await Promise.all(Array.from({ length: 40 }, () => introspect(issued.access_token)));
    const statuses = new Set(answers.map((a) => a.status));
    expect([...statuses].every((s) => s === 200 || s === 503), JSON.stringify([...statuses])).toBe(true);
    for (const a of answers.filter((x) => x.status === 503)) expect(a.retryAfter).not.toBeNull();
    expect(answers.some((a) => a.status === 200 && a.body.active === true)).toBe(true);

    // The node's role is at its limit; the operator's connections are not counted against it.
    const held = await withPg(url, undefined, async (db) =>
      Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM pg_stat_activity WHERE usename = $1', [role])).rows[0]?.n));
    expect(held).toBeLessThanOrEqual(LIMIT);
    const revoked = await tokenctl(['revoke', '--user', 'alice', '--yes', '--db', opsDb, '--json'], { timeoutMs: 20_000 });
    expect(revoked.code, revoked.stderr).toBe(0);
    expect((await introspect(issued.access_token)).body).toEqual({ active: false });
  }, 60_000);
});
