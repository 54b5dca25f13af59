/**
 * The PostgreSQL store of the benchmark: a schema of its own (`tokenctl_bench_<unix seconds>_<hex>`)
 * in the database named by TOKENCTL_BENCH_PG (default postgres://postgres@127.0.0.1:5432/test),
 * filled with an exact copy of the 1k SQLite store by `tokenctl migrate` (the built code, so the
 * same client, secret hash and token digests: the same token file serves both), and dropped
 * (DROP SCHEMA … CASCADE) when the benchmark ends. Only a loopback database is used.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { runToEnd, SERVER_CORE } from './proc.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const DEFAULT_PG = 'postgres://postgres@127.0.0.1:5432/test';
const PREFIX = 'tokenctl_bench_';
/** Schemas of earlier runs older than this are dropped at start (a run killed before its cleanup). */
const STALE_S = 3600;

/** The URL without its password, for logs and meta. @param {string} url */
export function redact(url) {
  const u = new URL(url);
  if (u.password) u.password = '***';
  return u.toString();
}

/** @param {string} base */
async function client(base) {
  const { default: pg } = await import('pg');
  const c = new pg.Client({ connectionString: base, connectionTimeoutMillis: 3000, query_timeout: 60_000 });
  c.on('error', () => {
    /* a dropped connection surfaces as a failed query */
  });
  await c.connect();
  return c;
}

/**
 * Creates and fills the schema. Throws (with a readable reason) when PostgreSQL is unreachable
 * or the copy fails; whatever was created is dropped again first.
 * @param {{ sqlite: string, log: (s: string) => void }} o the 1k SQLite store to copy (a work copy: migrate only reads it)
 * @returns {Promise<{ url: string, schema: string, base: string, drop: () => Promise<void>, cleanBase: string }>}
 */
export async function preparePg(o) {
  const base = process.env.TOKENCTL_BENCH_PG || DEFAULT_PG;
  let parsed;
  try {
    parsed = new URL(base);
  } catch {
    throw new Error(`TOKENCTL_BENCH_PG is not a URL`);
  }
  if (!/^postgres(ql)?:$/.test(parsed.protocol)) throw new Error(`TOKENCTL_BENCH_PG must be a postgres:// URL, not ${parsed.protocol}`);
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(parsed.hostname)) throw new Error(`TOKENCTL_BENCH_PG names ${parsed.hostname}: the benchmark only uses a loopback database`);
  parsed.searchParams.delete('schema');
  const cleanBase = parsed.toString();

  let c;
  try {
    c = await client(cleanBase);
  } catch (err) {
    throw new Error(`PostgreSQL at ${redact(cleanBase)} is unreachable (${err instanceof Error ? err.message : String(err)})`);
  }
  try {
    // Leftovers of a run killed before its cleanup (Ctrl-C): only ones old enough not to be a concurrent run's.
    const { rows } = await c.query('SELECT nspname FROM pg_namespace WHERE nspname LIKE $1', [`${PREFIX}%`]);
    for (const { nspname } of rows) {
      const m = /^tokenctl_bench_(\d+)_[0-9a-f]+$/.exec(nspname);
      if (m && Date.now() / 1000 - Number(m[1]) > STALE_S) {
        await c.query(`DROP SCHEMA IF EXISTS "${nspname}" CASCADE`);
        o.log(`  dropped a stale benchmark schema ${nspname}`);
      }
    }
  } finally {
    await c.end().catch(() => {});
  }

  const copy = await copyToPg({ base: cleanBase, sqlite: o.sqlite, log: o.log, what: 'the 1k store' });
  return { url: copy.url, schema: copy.schema, base: redact(cleanBase), drop: copy.drop, cleanBase };
}

/** Schemas created and not yet dropped: {@link dropAllPg} drops them (the bench's cleanup). @type {Map<string, () => Promise<void>>} */
const created = new Map();

/** Drops every schema this run created that is still there. */
export async function dropAllPg() {
  for (const drop of [...created.values()]) await drop();
}

/**
 * A new, empty schema of the bench's own in the database of TOKENCTL_BENCH_PG (a loopback one
 * only), which tokenctl fills as it first opens it; dropped with the others at the end.
 * @returns {{ url: string, schema: string, drop: () => Promise<void> }}
 */
export function emptyPg() {
  const base = new URL(process.env.TOKENCTL_BENCH_PG || DEFAULT_PG);
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(base.hostname)) throw new Error(`TOKENCTL_BENCH_PG names ${base.hostname}: the benchmark only uses a loopback database`);
  base.searchParams.delete('schema');
  const cleanBase = base.toString();
  const schema = `${PREFIX}${Math.floor(Date.now() / 1000)}_${randomBytes(4).toString('hex')}`;
  base.searchParams.set('schema', schema);
  const drop = async () => {
    created.delete(schema);
    const d = await client(cleanBase);
    try {
      await d.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    } finally {
      await d.end().catch(() => {});
    }
  };
  created.set(schema, drop);
  return { url: base.toString(), schema, drop };
}

/**
 * A new schema filled with an exact copy of a SQLite store by `tokenctl migrate` (the built code;
 * of the tree `root`, default this one, so that the schema is the version that build writes).
 * @param {{ base: string, sqlite: string, log: (s: string) => void, what: string, root?: string }} o
 * @returns {Promise<{ url: string, schema: string, drop: () => Promise<void> }>}
 */
export async function copyToPg(o) {
  const schema = `${PREFIX}${Math.floor(Date.now() / 1000)}_${randomBytes(4).toString('hex')}`;
  const target = new URL(o.base);
  target.searchParams.set('schema', schema);
  const url = target.toString();
  const drop = async () => {
    created.delete(schema);
    const d = await client(o.base);
    try {
      await d.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    } finally {
      await d.end().catch(() => {});
    }
  };
  created.set(schema, drop);
  try {
    const t0 = Date.now();
    const r = await runToEnd(process.execPath, [join(o.root ?? ROOT, 'bin/run.js'), 'migrate', '--from', o.sqlite, '--to', url, '--yes', '--json'], { timeoutMs: 300_000 });
    if (r.code !== 0) throw new Error(`tokenctl migrate into ${redact(url)} failed (exit ${r.code}): ${(r.stderr || r.stdout).trim().split('\n').slice(-3).join(' | ')}`);
    o.log(`  PostgreSQL store: schema ${schema} filled from ${o.what} by \`tokenctl migrate\` in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  } catch (err) {
    await drop().catch(() => {});
    throw err;
  }
  return { url, schema, drop };
}

/**
 * `tokenctl revoke --client bulk --yes --json` on a PostgreSQL copy of the bulk store, while a
 * probe on a connection of its own takes, one after another, the row lock of tokens the bulk
 * revocation is revoking (what a single revocation of one of them waits for): the longest wait
 * is how long the bulk revocation stalls other revocations.
 * @param {{ base: string, sqlite: string, log: (s: string) => void, expect: number }} o
 * @returns {Promise<{ elapsed_ms: number, wall_ms: number, revoked: number, max_stall_ms: number, probes: number }>}
 */
export async function bulkRevokePg(o) {
  const copy = await copyToPg({ base: o.base, sqlite: o.sqlite, log: o.log, what: 'the bulk store' });
  const probe = await client(o.base);
  try {
    const tokens = `"${copy.schema}".tokens`;
    const { rows } = await probe.query(`SELECT jti FROM ${tokens} WHERE client_id = 'bulk' ORDER BY random() LIMIT 2000`);
    const jtis = rows.map((r) => r.jti);
    let running = true;
    let maxStall = 0;
    let probes = 0;
    const probing = (async () => {
      for (let k = 0; running; k++) {
        const t0 = performance.now();
        // Takes the row lock and releases it at once (the statement's own transaction); changes nothing.
        await probe.query(`UPDATE ${tokens} SET revoked_at = revoked_at WHERE jti = $1`, [jtis[k % jtis.length]]);
        maxStall = Math.max(maxStall, performance.now() - t0);
        probes++;
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    })();
    const r = await runToEnd(process.execPath, [join(ROOT, 'bin/run.js'), 'revoke', '--client', 'bulk', '--yes', '--json', '--db', copy.url], { core: SERVER_CORE, timeoutMs: 300_000 });
    running = false;
    await probing;
    let out;
    try {
      out = JSON.parse(r.stdout);
    } catch {
      throw new Error(`tokenctl revoke --client on PostgreSQL gave no JSON (exit ${r.code}): ${(r.stdout + r.stderr).slice(0, 300)}`);
    }
    if (r.code !== 0 || out.revoked !== o.expect) throw new Error(`PostgreSQL bulk revocation revoked ${out.revoked} tokens, expected ${o.expect} (exit ${r.code})`);
    return { elapsed_ms: Number(out.elapsed_ms), wall_ms: r.ms, revoked: out.revoked, max_stall_ms: Math.round(maxStall), probes };
  } finally {
    await probe.end().catch(() => {});
    await copy.drop();
  }
}


/**
 * The URL of a store with `application_name` set, so that the database's backends serving one
 * server can be told apart from everyone else's (pg_stat_activity) and their CPU measured.
 * @param {string} url @param {string} name
 */
export function withApplicationName(url, name) {
  const u = new URL(url);
  u.searchParams.set('application_name', name);
  return u.toString();
}

/**
 * Finds, on demand, the pids of the backends whose application_name is `name` (a server under
 * test, {@link withApplicationName}) and of the database server's background processes (WAL
 * writer, checkpointer, background writer, autovacuum), for lib/measure.js's database CPU. Their
 * CPU is read from /proc, which needs the database on this machine (the bench's is on loopback).
 * @param {string} base @param {string} name
 * @returns {Promise<import('./measure.js').DatabaseWatcher & { close: () => Promise<void> }>}
 */
export async function backendWatcher(base, name) {
  const c = await client(base);
  return {
    pids: async () => {
      const { rows } = await c.query(
        `SELECT pid, application_name = $1 AS own FROM pg_stat_activity
          WHERE application_name = $1 OR backend_type NOT IN ('client backend', 'walsender')`,
        [name],
      );
      return { own: rows.filter((r) => r.own).map((r) => r.pid), aux: rows.filter((r) => !r.own).map((r) => r.pid) };
    },
    close: () => c.end().catch(() => {}),
  };
}
