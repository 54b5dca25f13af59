#!/usr/bin/env node
/**
 * A PostgreSQL revocation below HTTP: what the store costs per revocation, on the node and in
 * the database. C callers (default 50, the bench's connections) each read the client and the
 * token (findClientAndToken), then revoke it with its audit line and event (revokeToken), one
 * token after another, for S seconds, through the built store (dist/) on a schema of its own in
 * TOKENCTL_BENCH_PG (default postgres://postgres@127.0.0.1:5432/test, loopback only), dropped at
 * the end. Prints per revocation: this process's CPU, its backends' CPU (by application_name,
 * /proc), round trips (statements sent) and batches, and the rate.
 *
 * Usage: node bench/micro/pg-revocations.js [SECONDS=3] [CALLERS=50] [ROUNDS=3] [POOL=8]
 * PROFILE=file.cpuprofile: a CPU profile of the measured rounds only (not the set-up).
 */
import { randomBytes, randomUUID, createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import pg from 'pg';
import { cpuSeconds } from '../lib/proc.js';
import { withApplicationName } from '../lib/postgres.js';
import { clientRecord, tokenRecord } from '../lib/records.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const [seconds = '3', callers = '50', rounds = '3', poolSize = '8'] = process.argv.slice(2);
const base = process.env.TOKENCTL_BENCH_PG || 'postgres://postgres@127.0.0.1:5432/test';
if (!['127.0.0.1', 'localhost', '[::1]'].includes(new URL(base).hostname)) throw new Error('loopback databases only');
// STORE_TREE: another build's tree (its dist/), to compare two builds on the same machine minutes apart.
const tree = process.env.STORE_TREE ? `${process.env.STORE_TREE.replace(/\/$/, '')}/` : ROOT;
const { PostgresStore } = await import(`${tree}dist/store/postgres/store.js`);

const schema = `tokenctl_micro_${Math.floor(Date.now() / 1000)}_${randomBytes(4).toString('hex')}`;
const app = `tokenctl_micro_${process.pid}`;
const url = new URL(base);
url.searchParams.set('schema', schema);
const admin = new pg.Client({ connectionString: base });
await admin.connect();

/** Statements this process sent (pg's Client.prototype.query, every connection of the pool). */
let statements = 0;
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function (...args) {
  statements++;
  return query.apply(this, /** @type {any} */ (args));
};

/** Tokens in the store: enough for the rounds at ~8,000 a second; a round that runs out stops early (its rate holds). */
const N = Math.min(400_000, 8000 * (Number(seconds) * Number(rounds) + 1));
const store = await PostgresStore.open(withApplicationName(url.toString(), app), { poolSize: Number(poolSize), statementTimeoutMs: 60_000, observer: { commitBatch: () => batches++ } });
let batches = 0;
try {
  const now = Date.now();
  await store.createClient(clientRecord({ secretHash: 'x', createdAt: now, secretUpdatedAt: now }), {});
  const tokens = Array.from({ length: N }, () => {
    const secret = randomBytes(32).toString('base64url');
    return tokenRecord({ jti: randomUUID(), digest: createHash('sha256').update(secret).digest('base64url'), type: 'access_token', grantId: randomUUID(), clientId: 'bench', issuedAt: now, notBefore: now, expiresAt: now + 86_400_000 });
  });
  for (let i = 0; i < N; i += 20_000) await store.insertTokens(tokens.slice(i, i + 20_000));
  await admin.query(`ANALYZE "${schema}".tokens`);
  let next = 0;
  const revokeOne = async () => {
    const t = tokens[next++];
    if (!t) return false;
    const found = await store.findClientAndToken('bench', t.digest);
    const at = Date.now();
    const audit = { at, actor: 'bench', action: 'token.revoke', target: `${t.jti} client:bench`, count: 1, detail: 'access_token' };
    const event = { id: randomUUID(), at, reason: 'revoked', scope: 'token', jti: t.jti, tokenType: 'access_token', grantId: found.token.grantId, username: 'alice', clientId: 'bench' };
    if (!(await store.revokeToken(t.jti, at, false, { audit, event }))) throw new Error('not revoked');
    return true;
  };
  const backends = async () => (await admin.query('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [app])).rows.map((r) => r.pid);
  const run = async (/** @type {number} */ ms) => {
    const pids = await backends();
    const db0 = pids.map(cpuSeconds);
    const cpu0 = process.cpuUsage();
    const [s0, b0, t0] = [statements, batches, performance.now()];
    const end = t0 + ms;
    let done = 0;
    await Promise.all(Array.from({ length: Number(callers) }, async () => {
      while (performance.now() < end && (await revokeOne())) done++;
    }));
    const wall = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const after = await backends();
    const db = after.reduce((sum, pid) => sum + cpuSeconds(pid) - (db0[pids.indexOf(pid)] ?? 0), 0);
    return { done, wall, node: (cpu.user + cpu.system) / 1e6, db, statements: statements - s0, batches: batches - b0 };
  };
  await run(1000); // warm-up: connections, plans, JIT
  const profiler = process.env.PROFILE ? new Session() : null;
  if (profiler) {
    profiler.connect();
    await profiler.post('Profiler.enable');
    await profiler.post('Profiler.start');
  }
  for (let r = 0; r < Number(rounds); r++) {
    const x = await run(Number(seconds) * 1000);
    const us = (/** @type {number} */ s) => ((s * 1e6) / x.done).toFixed(0);
    console.log(`${Math.round(x.done / x.wall)} revocations/s; per revocation: node ${us(x.node)} µs CPU, its backends ${us(x.db)} µs, together ${Math.round(x.done / (x.node + x.db))} per CPU-s; ${(x.statements / x.done).toFixed(2)} statements, ${(x.done / x.batches).toFixed(1)} per write batch`);
  }
  if (profiler) {
    const { profile } = await profiler.post('Profiler.stop');
    writeFileSync(/** @type {string} */ (process.env.PROFILE), JSON.stringify(profile));
  }
} finally {
  await store.close();
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.end();
}
