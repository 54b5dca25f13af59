#!/usr/bin/env node
/**
 * `npm run bench [-- --quick]`: tokenctl against the ceiling (bare node:http) and a peer
 * (node-oidc-provider 9), all in one run, contenders alternated within each repetition, medians
 * of the repetitions. Servers on core 0, the load generator on core 1 (taskset), 127.0.0.1 only.
 * PostgreSQL rows: one and two `serve` nodes on a schema of the bench's own in the database of
 * TOKENCTL_BENCH_PG (default postgres://postgres@127.0.0.1:5432/test), dropped at the end.
 * Writes bench/results/latest.json; see bench/README.md for what each figure means.
 *
 * Flags: --quick (2 repetitions of 2 s), --reps N, --duration S, --no-build, --rebuild-stores,
 *        --keep (keep the work directory with the servers' logs), --only GROUP[,GROUP…] (just
 *        those figures' runs, see GROUPS; `--only pg-push` alone writes bench/results/latest-pg-push.json).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, readdirSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { coreCount, killAll, killGroup, pinning, runToEnd, SERVER_CORE } from './lib/proc.js';
import { isActive, postForm, runLoad, runLoadAcross, runLoginLoop } from './lib/measure.js';
import { backendWatcher, bulkRevokePg, copyToPg, dropAllPg, preparePg, withApplicationName } from './lib/postgres.js';
import { performance } from 'node:perf_hooks';
import { CLIENT, CODE_CLIENT, REQUESTS, serveKnows, startCeiling, startPeer, startTokenctl, tokenctlServeMissing } from './lib/contenders.js';
import { copyStore, prepareStores } from './lib/stores.js';
import { bulkRevoke, cliColdStarts } from './lib/cli.js';
import { details, detailsTable, figures, figuresTable, FIGURES, median, perRep, round } from './lib/report.js';
import { EVENT_FIGURES, eventsTable, runEventsBench } from './events.js';
import { PG_PUSH_FIGURES, pgPushTable, runPgPushBench } from './pg-push.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false }, reps: { type: 'string' }, duration: { type: 'string' },
    'no-build': { type: 'boolean', default: false }, 'rebuild-stores': { type: 'boolean', default: false }, keep: { type: 'boolean', default: false },
    only: { type: 'string' },
  },
});
/**
 * What `--only` may name: groups of runs, each with what its figures are divided by (the peer's
 * revocation for `pg_revocation`, SQLite's introspection for `pg_introspection`). Without it,
 * every group runs.
 */
const GROUPS = ['introspection', 'revocation', 'pg_introspection', 'pg_revocation', 'pg_refresh', 'pg_capacity', 'login', 'cli', 'bulk', 'pg_bulk', 'events', 'pg-push'];
const only = flags.only === undefined ? null : flags.only.split(',').map((g) => g.trim()).filter(Boolean);
const unknown = (only ?? []).filter((g) => !GROUPS.includes(g));
if (unknown.length > 0) throw new Error(`--only: unknown group(s) ${unknown.join(', ')}; known: ${GROUPS.join(', ')}`);
/** Whether any of these groups is to run. @param {...string} groups */
const want = (...groups) => only === null || groups.some((g) => only.includes(g));
const quick = Boolean(flags.quick);
const cfg = {
  reps: Number(flags.reps ?? (quick ? 2 : 3)),
  warmupS: quick ? 1 : 2,
  durationS: Number(flags.duration ?? (quick ? 2 : 5)),
  connections: 50,
  cliRuns: quick ? 11 : 21,
  peerRevokePool: quick ? 60_000 : 150_000,
  // The login round trips: three times a load run, for a few hundred of them per repetition.
  loginS: Number(flags.duration ?? (quick ? 2 : 5)) * 3,
};
const log = (/** @type {string} */ s) => process.stdout.write(s + '\n');
/** @type {string[]} */
const notes = [];
const note = (/** @type {string} */ s) => {
  if (!notes.includes(s)) notes.push(s);
  log(`  ! ${s}`);
};
const workDir = mkdtempSync(join(tmpdir(), 'tokenctl-bench-'));
const started = Date.now();
/** Drops the PostgreSQL schema once (set while it exists). @type {(() => Promise<void>)|null} */
let dropPg = null;
async function dropPgOnce() {
  const drop = dropPg;
  dropPg = null;
  if (drop) await drop();
  await dropAllPg();
}

/** Newest modification time under a directory (ms). */
function newest(/** @type {string} */ dir) {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) t = Math.max(t, statSync(join(e.parentPath ?? e.path, e.name)).mtimeMs);
  }
  return t;
}

async function build() {
  let stale = true;
  try {
    stale = newest(join(ROOT, 'src')) > newest(join(ROOT, 'dist'));
  } catch {
    /* no dist yet */
  }
  if (flags['no-build'] || !stale) return;
  log('building tokenctl (npm run build)…');
  const r = await runToEnd('npm', ['run', 'build'], { timeoutMs: 600_000 });
  if (r.code !== 0) note(`npm run build failed (exit ${r.code}); using whatever dist/ holds: ${r.stdout.split('\n').filter((l) => /error/i.test(l)).slice(0, 3).join(' | ')}`);
}

/**
 * One load run, with the server started (and killed) around it unless one is given.
 * @param {import('./lib/report.js').Rep} rep @param {string} key
 * @param {() => Promise<{ pid: number, url: string, child: import('node:child_process').ChildProcess }>} start
 * @param {{ path: string, prefix: string, suffix?: string, headers?: Record<string,string> }} req
 * @param {string} tokenFile
 * @param {{ fresh?: boolean, checkActive?: boolean, check?: (url: string, lines: string[], r: import('./lib/measure.js').LoadResult) => Promise<void>, pg?: PgServer }} [opt]
 *   `check`: what to verify after a fresh run instead of the revocation's check; `pg`: the
 *   server's PostgreSQL backends, whose CPU is measured beside its own.
 */
async function measure(rep, key, start, req, tokenFile, opt = {}) {
  const server = await start();
  const database = opt.pg ? await backendWatcher(opt.pg.base, opt.pg.name) : undefined;
  try {
    const tokens = readFileSync(tokenFile, 'utf8').split('\n').filter(Boolean);
    const url = server.url + (key.startsWith('peer.') ? REQUESTS.peer.introspect.path : REQUESTS.tokenctl.introspect.path);
    if (opt.checkActive && !(await isActive(url, /** @type {string} */ (tokens[0]), CLIENT))) throw new Error(`${key}: the first token is not active before the run`);
    const r = await runLoad({ label: `${key}-${rep.n}`, server, ...req, tokenFile, fresh: opt.fresh, connections: cfg.connections, warmupS: cfg.warmupS, durationS: cfg.durationS, workDir, database });
    if (r.exhausted) note(`${key}: the pool of ${tokens.length} fresh tokens ran out; the run was cut short (rate still valid)`);
    if (r.non2xx + r.errors + r.timeouts > 0) note(`${key}: ${r.non2xx} non-2xx answers, ${r.errors} errors, ${r.timeouts} timeouts`);
    if (opt.fresh && opt.check) {
      await opt.check(server.url, tokens, r);
    } else if (opt.fresh) {
      // A revocation acknowledged during the run took effect; the next unused token is still active.
      if (await isActive(url, /** @type {string} */ (tokens[r.firstToken]), CLIENT)) throw new Error(`${key}: a token revoked during the run is still active`);
      const unused = tokens[r.firstToken + r.tokensUsed + cfg.connections];
      if (unused && !(await isActive(url, unused, CLIENT))) throw new Error(`${key}: a token never revoked reads as inactive`);
    }
    rep.runs[key] = r;
    log(`  ${key.padEnd(30)} ${Math.round(r.rps).toLocaleString('en-US').padStart(7)} req/s  p99 ${r.latency.p99} ms  server CPU ${r.serverCpuShare.toFixed(2)}${dbCpu(r)}  loadgen CPU ${r.loadCpuShare.toFixed(2)}  RSS ${r.serverRssMb.toFixed(0)} MB`);
  } finally {
    await database?.close();
    if (!('keepAlive' in server)) killGroup(server.child);
  }
}

/**
 * A server on PostgreSQL whose backends are told apart by their application_name, so that their
 * CPU is measured beside the server's.
 * @typedef {{ base: string, name: string }} PgServer
 */

/** The database's CPU in a run's log line, when measured. @param {import('./lib/measure.js').LoadResult} r */
function dbCpu(r) {
  if (r.dbCpuShare === undefined) return '';
  return `  db CPU ${r.dbCpuShare.toFixed(2)} (+${(r.dbAuxCpuShare ?? 0).toFixed(2)} background)  ${Math.round(r.rps / (r.serverCpuShare + r.dbCpuShare)).toLocaleString('en-US')} req per node+db CPU-s`;
}

/**
 * `startTokenctl` on PostgreSQL, its backends named for the run, and what measure needs to find them.
 * @param {string} url @param {string} name the run's own, unique in this bench (a log file's name)
 * @param {{ base: string }} pg
 * @returns {[() => ReturnType<typeof startTokenctl>, PgServer]}
 */
function pgServer(url, name, pg, node = 'bench-a') {
  const app = `tokenctl_bench_${process.pid}_${name}`.replace(/[^a-z0-9_]/gi, '_').slice(0, 63);
  return [() => startTokenctl(workDir, name, withApplicationName(url, app), [], { node }), { base: pg.base, name: app }];
}

/**
 * A run of several `serve` nodes on one PostgreSQL schema, the connections split across them (one
 * generator each), their backends' CPU measured beside theirs. An introspection run ends with a
 * cross-node check: a token revoked through node A must read inactive on node B at once. A fresh
 * (revocation) run gives each node its own slice of the tokens, and checks that the first token
 * revoked through each node reads inactive on the next node.
 * @param {import('./lib/report.js').Rep} rep @param {string} key @param {string} db
 * @param {{ path: string, prefix: string, suffix?: string, headers?: Record<string,string> }} req
 * @param {string} tokenFile @param {(string|null)[]} cores one per node
 * @param {{ base: string }} pg @param {{ fresh?: boolean }} [opt]
 */
async function measureNodes(rep, key, db, req, tokenFile, cores, pg, opt = {}) {
  /** @type {Awaited<ReturnType<typeof startTokenctl>>[]} */
  const servers = [];
  const app = `tokenctl_bench_${process.pid}_${key}_${rep.n}`.replace(/[^a-z0-9_]/gi, '_').slice(0, 63);
  const names = cores.map((_, i) => `bench-${String.fromCharCode(97 + i)}`);
  let database;
  try {
    for (const [i, name] of names.entries()) servers.push(await startTokenctl(workDir, `${key}-${name}-${rep.n}`, withApplicationName(db, app), [], { node: name, core: cores[i] ?? null }));
    database = await backendWatcher(pg.base, app);
    const tokens = readFileSync(tokenFile, 'utf8').split('\n').filter(Boolean);
    const introspection = servers.map((x) => x.url + REQUESTS.tokenctl.introspect.path);
    const slice = (/** @type {number} */ i) => Math.floor((i * tokens.length) / servers.length);
    if (req.path === REQUESTS.tokenctl.introspect.path) {
      for (const u of introspection) if (!(await isActive(u, /** @type {string} */ (tokens[0]), CLIENT))) throw new Error(`${key}: the first token is not active before the run`);
    } else if (opt.fresh) {
      for (const [i, u] of introspection.entries()) if (!(await isActive(u, /** @type {string} */ (tokens[slice(i)]), CLIENT))) throw new Error(`${key}: the first token of node ${i + 1}'s slice is not active before the run`);
    }
    const r = await runLoadAcross({ label: `${key}-${rep.n}`, servers, ...req, tokenFile, fresh: opt.fresh, connections: cfg.connections, warmupS: cfg.warmupS, durationS: cfg.durationS, workDir, database });
    if (r.non2xx + r.errors + r.timeouts > 0) note(`${key}: ${r.non2xx} non-2xx answers, ${r.errors} errors, ${r.timeouts} timeouts`);
    if (req.path === REQUESTS.tokenctl.introspect.path) {
      // One token per repetition (from the end of the file) revoked on A, read on B.
      const victim = /** @type {string} */ (tokens[tokens.length - 1 - rep.n]);
      const revoked = await postForm(/** @type {{url: string}} */ (servers[0]).url + REQUESTS.tokenctl.revoke.path, `token=${encodeURIComponent(victim)}${REQUESTS.tokenctl.revoke.suffix}`);
      if (revoked.status !== 200) throw new Error(`${key}: revocation on node A answered ${revoked.status}`);
      if (await isActive(/** @type {string} */ (introspection[1]), victim, CLIENT)) throw new Error(`${key}: a token revoked on node A still reads active on node B`);
    } else if (opt.fresh) {
      for (const i of servers.keys()) {
        const other = /** @type {string} */ (introspection[(i + 1) % servers.length]);
        if (await isActive(other, /** @type {string} */ (tokens[slice(i)]), CLIENT)) throw new Error(`${key}: a token revoked through node ${i + 1} still reads active on another node`);
      }
    }
    rep.runs[key] = r;
    log(`  ${key.padEnd(30)} ${Math.round(r.rps).toLocaleString('en-US').padStart(7)} req/s  p99 ${r.latency.p99} ms  server CPU ${r.serverCpuShare.toFixed(2)} (${servers.length} nodes)${dbCpu(r)}  loadgen CPU ${r.loadCpuShare.toFixed(2)}  RSS ${r.serverRssMb.toFixed(0)} MB`);
  } finally {
    await database?.close();
    for (const x of servers) killGroup(x.child);
  }
}

/**
 * After the code exchanges: a code exchanged during the run is refused when presented again
 * (RFC 6749 §4.1.2), and the next code nobody presented is still exchanged for tokens.
 * @param {string} base @param {string[]} tails @param {import('./lib/measure.js').LoadResult} r
 */
async function checkCodes(base, tails, r) {
  const req = REQUESTS.tokenctl.authorizationCode;
  const exchange = (/** @type {string} */ tail) => postForm(base + req.path, req.prefix + tail + req.suffix, req.headers);
  const again = await exchange(/** @type {string} */ (tails[r.firstToken]));
  if (again.status !== 400 || again.json?.error !== 'invalid_grant') throw new Error(`tokenctl.authorization_code: a code exchanged during the run was answered ${again.status} when presented again`);
  const unused = tails[r.firstToken + r.tokensUsed + cfg.connections];
  if (unused) {
    const fresh = await exchange(unused);
    if (fresh.status !== 200 || typeof fresh.json?.access_token !== 'string') throw new Error(`tokenctl.authorization_code: a code never presented was answered ${fresh.status}: ${fresh.text.slice(0, 200)}`);
  }
}

/**
 * The full login round trip under load: `serve --dev-login` on a fresh copy of the pool store,
 * introspections at full speed as the background (the first 1,000 tokens of the pool, cycled as
 * the introspection figure cycles its 1,000), and the login client (lib/login-worker.js) going
 * through authorize → login page → form → continue → code → token, one round trip at a time,
 * during the background's measured part. That part lasts the login phase plus 2 s, for the
 * client's start-up and warm-up logins.
 * @param {import('./lib/report.js').Rep} rep @param {{ db: string, accessFile: string }} pool
 */
async function measureLogin(rep, pool) {
  const key = 'tokenctl.login_background';
  const db = copyStore(pool.db, join(workDir, `login-${rep.n}.db`));
  const tokenFile = join(workDir, 'login-background-tokens.txt');
  writeFileSync(tokenFile, readFileSync(pool.accessFile, 'utf8').split('\n').filter(Boolean).slice(0, 1000).join('\n') + '\n');
  const server = await startTokenctl(workDir, `tklogin-${rep.n}`, db, [], { serveArgs: ['--dev-login'] });
  try {
    const first = readFileSync(tokenFile, 'utf8').split('\n')[0] ?? '';
    if (!(await isActive(server.url + REQUESTS.tokenctl.introspect.path, first, CLIENT))) throw new Error(`${key}: the first token is not active before the run`);
    /** @type {Promise<import('./lib/measure.js').LoginResult>|null} */
    let login = null;
    let backgroundEnd = Infinity;
    const label = `${key}-${rep.n}`;
    const r = await runLoad({
      label, server, ...REQUESTS.tokenctl.introspect, tokenFile, connections: cfg.connections, warmupS: cfg.warmupS, durationS: cfg.loginS + 2, workDir,
      onMeasure: () => {
        if (login === null) {
          login = runLoginLoop({ label, url: server.url, client: CODE_CLIENT, seconds: cfg.loginS, warmup: 3, workDir });
          // Awaited below; should the background fail first, its failure is that run's note, not a crash.
          login.catch(() => {});
        } else backgroundEnd = performance.now();
      },
    });
    if (login === null) throw new Error(`${key}: the background load never started its measured part`);
    const l = await /** @type {Promise<import('./lib/measure.js').LoginResult>} */ (login);
    if (l.finishedAt > backgroundEnd) note(`login round trip: the login loop outlasted the background load by ${Math.round(l.finishedAt - backgroundEnd)} ms (its last round trips ran on an idle server)`);
    if (l.failures > 0) note(`login round trip: ${l.failures} of ${l.samples + l.failures} round trips failed: ${l.first_failures.join(' | ')}`);
    if (r.non2xx + r.errors + r.timeouts > 0) note(`${key}: ${r.non2xx} non-2xx answers, ${r.errors} errors, ${r.timeouts} timeouts`);
    rep.runs[key] = r;
    rep.login = l;
    log(`  ${'tokenctl.login_round_trip'.padEnd(30)} p50 ${l.p50_ms} ms  p99 ${l.p99_ms} ms  (${l.samples} logins; steps p50 ${Object.values(l.step_p50_ms).join('/')} ms)  background ${Math.round(r.rps).toLocaleString('en-US')} req/s  server CPU ${r.serverCpuShare.toFixed(2)}  loadgen CPU ${r.loadCpuShare.toFixed(2)}`);
  } finally {
    killGroup(server.child);
  }
}

/** What the login round trips were, beyond their figures: counts and each step's median, per repetition. */
function loginMeta(/** @type {import('./lib/report.js').Rep[]} */ reps) {
  const ls = reps.map((r) => r.login).filter((l) => l !== undefined);
  if (ls.length === 0) return null;
  return {
    phase_s: cfg.loginS, client: CODE_CLIENT.id, samples: ls.map((l) => l.samples), failures: ls.map((l) => l.failures),
    step_p50_ms: ls.map((l) => l.step_p50_ms), step_p99_ms: ls.map((l) => l.step_p99_ms),
  };
}

/** Runs `fn`, turning a failure into a note (the figure stays null) so the rest still runs. */
async function attempt(/** @type {string} */ what, /** @type {() => Promise<unknown>} */ fn) {
  try {
    await fn();
  } catch (err) {
    note(`${what} failed: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** The PostgreSQL push figures (bench/pg-push.js): one repetition in quick runs, two otherwise. */
async function pgPush() {
  /** @type {Awaited<ReturnType<typeof runPgPushBench>>|null} */
  let result = null;
  await attempt('the PostgreSQL push figures', async () => {
    result = await runPgPushBench({ workDir, reps: Number(flags.reps ?? (quick ? 1 : 2)), seconds: quick ? 10 : 20, log, note });
  });
  return /** @type {Awaited<ReturnType<typeof runPgPushBench>>|null} */ (result);
}

/** `--only pg-push`: build, the PostgreSQL push figures, bench/results/latest-pg-push.json. */
async function onlyPgPush() {
  log(`tokenctl benchmark, PostgreSQL push alone (${quick ? 'quick' : 'full'}); work dir ${workDir}`);
  await build();
  const serveMissing = await tokenctlServeMissing();
  if (serveMissing) throw new Error(`tokenctl serve is missing: ${serveMissing}`);
  const r = await pgPush();
  const out = Object.fromEntries(PG_PUSH_FIGURES.map((f) => [f.key, round(r?.figs[f.key] ?? null, 1)]));
  const meta = { date: new Date().toISOString(), mode: quick ? 'quick' : 'full', elapsed_s: Math.round((Date.now() - started) / 1000), machine: { node: process.version, cpu: cpus()[0]?.model ?? 'unknown', cores: cpus().length }, pg_push: r?.meta ?? null, notes };
  mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
  writeFileSync(join(ROOT, 'bench/results/latest-pg-push.json'), JSON.stringify({ ...out, meta }, null, 2) + '\n');
  log('');
  log(pgPushTable(r?.figs ?? {}));
  log(`${meta.machine.cpu}, ${meta.machine.cores} cores, Node ${process.version}; ${meta.elapsed_s} s; written to bench/results/latest-pg-push.json`);
  for (const n of notes) log(`note: ${n}`);
}

async function main() {
  if (flags.only === 'pg-push') return onlyPgPush();
  log(`tokenctl benchmark (${quick ? 'quick' : 'full'}): ${cfg.reps} repetitions × ${cfg.durationS} s (+${cfg.warmupS} s warm-up), ${cfg.connections} connections; work dir ${workDir}`);
  if (!pinning()) note('taskset or a second core is missing: server and load generator share the cores');
  await build();
  const serveMissing = await tokenctlServeMissing();
  if (serveMissing) note(`tokenctl server figures skipped: ${serveMissing}`);

  /** @type {Awaited<ReturnType<typeof prepareStores>>|null} */
  let stores = null;
  await attempt('building the tokenctl stores', async () => {
    log('preparing stores…');
    stores = await prepareStores({ quick, rebuild: Boolean(flags['rebuild-stores']), log });
  });
  const s = /** @type {Awaited<ReturnType<typeof prepareStores>>|null} */ (stores);
  const ceilingTokens = join(workDir, 'ceiling-tokens.txt');
  writeFileSync(ceilingTokens, Array.from({ length: 1000 }, () => 'tca_' + randomBytes(32).toString('base64url')).join('\n') + '\n');
  const t1k = s ? copyStore(s.t1k.db, join(workDir, 't1k.db')) : null;
  const t1m = s ? copyStore(s.t1m.db, join(workDir, 't1m.db')) : null;
  const tk = !serveMissing && s;

  /** @type {Awaited<ReturnType<typeof preparePg>>|null} */
  let pgStore = null;
  /** @type {Record<string, unknown>|null} */
  let pgMeta = null;
  // Two nodes: each on a core of its own when there are 3+ (the generator keeps core 1); on 2
  // cores not pinned (pinning the second node to core 1 would put it beside the generator).
  const cores = coreCount();
  const twoNodeCores = pinning() && cores >= 3 ? [SERVER_CORE, '2'] : [null, null];
  // Three nodes (pg_capacity): cores 0, 2 and 3 when there are 4+, else not pinned.
  const threeNodeCores = pinning() && cores >= 4 ? [SERVER_CORE, '2', '3'] : [null, null, null];
  const pgWanted = want('pg_introspection', 'pg_revocation', 'pg_refresh', 'pg_capacity', 'pg_bulk');
  if (tk && pgWanted) {
    await attempt('preparing the PostgreSQL store (the PostgreSQL rows are null)', async () => {
      const pg = await preparePg({ sqlite: /** @type {string} */ (t1k), log });
      pgStore = pg;
      dropPg = pg.drop;
      pgMeta = {
        database: pg.base, schema: pg.schema, pool_size: 'serve default', one_node_core: pinning() ? SERVER_CORE : 'not pinned',
        two_nodes_cores: twoNodeCores[0] === null ? 'not pinned' : twoNodeCores.join(' and '),
        three_nodes_cores: threeNodeCores[0] === null ? 'not pinned' : threeNodeCores.join(', '),
      };
      if (twoNodeCores[0] === null && pinning() && want('pg_introspection')) note(`PostgreSQL 2 nodes: not pinned (${cores} cores): the two nodes, PostgreSQL and the load generator share the cores`);
      if (threeNodeCores[0] === null && pinning() && want('pg_capacity')) note(`PostgreSQL 3 nodes: not pinned (${cores} cores): the three nodes, PostgreSQL and the load generators share the cores`);
    });
  }
  const pg = /** @type {Awaited<ReturnType<typeof preparePg>>|null} */ (pgStore);

  /** @type {import('./lib/report.js').Rep[]} */
  const reps = [];
  for (let n = 0; n < cfg.reps; n++) {
    log(`repetition ${n + 1}/${cfg.reps}`);
    /** @type {import('./lib/report.js').Rep} */
    const rep = { n, runs: {} };
    reps.push(rep);
    const flip = (/** @type {any[]} */ xs) => (n % 2 ? xs.reverse() : xs);
    /** @type {Awaited<ReturnType<typeof startPeer>>|null} */
    let peer = null;
    if (want('introspection', 'revocation', 'pg_revocation')) await attempt('starting the peer', async () => {
      peer = await startPeer(workDir, `peer-${n}`, cfg.peerRevokePool);
    });
    const p = /** @type {Awaited<ReturnType<typeof startPeer>>|null} */ (peer);
    const keep = async () => ({ ...(/** @type {NonNullable<typeof p>} */ (p)), keepAlive: true });
    try {
      const introspection = flip([
        want('introspection') && (() => measure(rep, 'ceiling.introspect', () => startCeiling(workDir, `ceiling-${n}`), REQUESTS.ceiling.introspect, ceilingTokens)),
        p && want('introspection') && (() => measure(rep, 'peer.introspect', keep, REQUESTS.peer.introspect, p.introspectFile, { checkActive: true })),
        tk && want('introspection', 'pg_introspection') && (() => measure(rep, 'tokenctl.introspect', () => startTokenctl(workDir, `tk1k-${n}`, /** @type {string} */ (t1k)), REQUESTS.tokenctl.introspect, s.t1k.accessFile, { checkActive: true })),
        // Metrics on (serve --metrics-port 0), beside the run without: metrics_cost_ratio.
        tk && want('introspection') && (() => measure(rep, 'tokenctl.introspect_metrics', () => startTokenctl(workDir, `tk1km-${n}`, /** @type {string} */ (t1k), [], { serveArgs: ['--metrics-port', '0'] }), REQUESTS.tokenctl.introspect, s.t1k.accessFile, { checkActive: true })),
        tk && want('introspection') && (() => measure(rep, 'tokenctl.introspect_1m', () => startTokenctl(workDir, `tk1m-${n}`, /** @type {string} */ (t1m)), REQUESTS.tokenctl.introspect, s.t1m.accessFile, { checkActive: true })),
        tk && pg && want('pg_introspection', 'pg_capacity') && (() => {
          const [start, backends] = pgServer(pg.url, `tkpg1-${n}`, { base: pg.cleanBase });
          return measure(rep, 'tokenctl.introspect_pg_1node', start, REQUESTS.tokenctl.introspect, s.t1k.accessFile, { checkActive: true, pg: backends });
        }),
        tk && pg && want('pg_introspection') && (() => measureNodes(rep, 'tokenctl.introspect_pg_2nodes', pg.url, REQUESTS.tokenctl.introspect, s.t1k.accessFile, twoNodeCores, { base: pg.cleanBase })),
        tk && pg && want('pg_capacity') && (() => measureNodes(rep, 'tokenctl.introspect_pg_3nodes', pg.url, REQUESTS.tokenctl.introspect, s.t1k.accessFile, threeNodeCores, { base: pg.cleanBase })),
      ]);
      for (const run of introspection.filter(Boolean)) await attempt('an introspection run', run);
      const revocation = flip([
        p && want('revocation', 'pg_revocation') && (() => measure(rep, 'peer.revoke', keep, REQUESTS.peer.revoke, p.revokeFile, { fresh: true })),
        tk && want('revocation') && (async () => {
          const db = copyStore(s.pool.db, join(workDir, `pool-${n}.db`));
          await measure(rep, 'tokenctl.revoke', () => startTokenctl(workDir, `tkpool-${n}`, db), REQUESTS.tokenctl.revoke, s.pool.accessFile, { fresh: true });
          // The two grants on the same file, one after the other, their order flipped each repetition.
          const grants = flip([
            () => measure(rep, 'tokenctl.refresh', () => startTokenctl(workDir, `tkrefresh-${n}`, db), REQUESTS.tokenctl.refresh, s.pool.refreshFile),
            // The same refresh with a DPoP proof on every request: dpop_refresh_ratio (a build without DPoP is skipped).
            ...(serveKnows('--dpop-nonce-secret') ? [() => measure(rep, 'tokenctl.refresh_dpop', () => startTokenctl(workDir, `tkrefreshdpop-${n}`, db), REQUESTS.tokenctl.refreshDpop, s.pool.refreshFile)] : []),
            () => measure(rep, 'tokenctl.authorization_code', () => startTokenctl(workDir, `tkcode-${n}`, db), REQUESTS.tokenctl.authorizationCode, s.pool.codesFile, { fresh: true, check: checkCodes }),
          ]);
          for (const grant of grants) await attempt('a grant run', grant);
        }),
        // SQLite's refresh alone, on a fresh copy, when only the PostgreSQL refresh's ratio is wanted.
        tk && !want('revocation') && want('pg_refresh') && (() =>
          measure(rep, 'tokenctl.refresh', () => startTokenctl(workDir, `tkrefresh-${n}`, copyStore(s.pool.db, join(workDir, `pool-${n}.db`))), REQUESTS.tokenctl.refresh, s.pool.refreshFile)),
        tk && pg && want('pg_revocation', 'pg_refresh', 'pg_capacity') && (async () => {
          // The same pool of fresh tokens, copied into a schema of this repetition's own.
          const copy = await copyToPg({ base: pg.cleanBase, sqlite: copyStore(s.pool.db, join(workDir, `pgpool-${n}.db`)), log, what: 'the revocation pool' });
          try {
            if (want('pg_revocation', 'pg_capacity')) {
              const [start, backends] = pgServer(copy.url, `tkpgpool-${n}`, { base: pg.cleanBase });
              await measure(rep, 'tokenctl.revoke_pg', start, REQUESTS.tokenctl.revoke, s.pool.accessFile, { fresh: true, pg: backends });
            }
            if (want('pg_refresh', 'pg_capacity')) {
              const [start, backends] = pgServer(copy.url, `tkpgrefresh-${n}`, { base: pg.cleanBase });
              await measure(rep, 'tokenctl.refresh_pg', start, REQUESTS.tokenctl.refresh, s.pool.refreshFile, { pg: backends });
            }
          } finally {
            await copy.drop();
          }
        }),
        tk && pg && want('pg_capacity') && (async () => {
          // Three nodes on a copy of their own, so that they revoke tokens nobody revoked yet.
          const copy = await copyToPg({ base: pg.cleanBase, sqlite: copyStore(s.pool.db, join(workDir, `pgpool3-${n}.db`)), log, what: 'the revocation pool (3 nodes)' });
          try {
            await measureNodes(rep, 'tokenctl.revoke_pg_3nodes', copy.url, REQUESTS.tokenctl.revoke, s.pool.accessFile, threeNodeCores, { base: pg.cleanBase }, { fresh: true });
            await measureNodes(rep, 'tokenctl.refresh_pg_3nodes', copy.url, REQUESTS.tokenctl.refresh, s.pool.refreshFile, threeNodeCores, { base: pg.cleanBase });
          } finally {
            await copy.drop();
          }
        }),
      ]);
      for (const run of revocation.filter(Boolean)) await attempt('a revocation/refresh run', run);
      if (tk && want('login') && serveKnows('--dev-login')) await attempt('the login round trip', () => measureLogin(rep, s.pool));
    } finally {
      if (p) killGroup(p.child);
    }
    if (s && want('cli')) {
      await attempt('the CLI cold start', async () => {
        const token = readFileSync(s.t1k.accessFile, 'utf8').split('\n')[0] ?? '';
        rep.cli = await cliColdStarts({ db: /** @type {string} */ (t1k), token, runs: cfg.cliRuns });
        log(`  cli: node -e 0 ${rep.cli.node_ms.toFixed(0)} ms, plain script ${rep.cli.plain_ms.toFixed(0)} ms, tokenctl introspect ${rep.cli.tokenctl_ms.toFixed(0)} ms`);
      });
    }
    if (s && want('bulk')) {
      await attempt('the bulk revocation', async () => {
        rep.bulk = await bulkRevoke({ template: s.bulk.db, workDir, rep: n, expect: 100_000 });
        log(`  bulk revoke 100k: ${rep.bulk.elapsed_ms} ms (command's own), ${rep.bulk.wall_ms.toFixed(0)} ms wall`);
      });
    }
    if (s && pg && want('pg_bulk')) {
      await attempt('the PostgreSQL bulk revocation', async () => {
        rep.pgBulk = await bulkRevokePg({ base: pg.cleanBase, sqlite: copyStore(s.bulk.db, join(workDir, `pgbulk-${n}.db`)), log, expect: 100_000 });
        log(`  PostgreSQL bulk revoke 100k: ${rep.pgBulk.elapsed_ms} ms (command's own), ${rep.pgBulk.wall_ms.toFixed(0)} ms wall, longest stall of a revocation ${rep.pgBulk.max_stall_ms} ms (${rep.pgBulk.probes} probes)`);
      });
    }
  }

  // Security events (bench/events.js): their cost to revocation, and a resource server's view.
  /** @type {Awaited<ReturnType<typeof runEventsBench>>|null} */
  let events = null;
  if (tk && want('events')) {
    log('security events');
    await attempt('the events figures', async () => {
      events = await runEventsBench({ pool: s.pool, workDir, reps: cfg.reps, durationS: cfg.durationS, warmupS: cfg.warmupS, connections: cfg.connections, log, note });
    });
  }
  const ev = /** @type {Awaited<ReturnType<typeof runEventsBench>>|null} */ (events);
  // Security events on PostgreSQL, three nodes (bench/pg-push.js): push and poll under load, and a backlog.
  const pgp = tk && pg && want('pg-push') ? (log('security events on PostgreSQL, 3 nodes'), await pgPush()) : null;
  /** @type {Record<string, number|null>} */
  const pgpFigs = pgp?.figs ?? {};

  await attempt('dropping the PostgreSQL schema', dropPgOnce);
  if (pg) log(`PostgreSQL schema ${pg.schema} dropped`);

  const figs = figures(reps);
  const out = Object.fromEntries([...FIGURES, ...EVENT_FIGURES, ...PG_PUSH_FIGURES].map((f) => [f.key, round(figs[f.key] ?? ev?.figs[f.key] ?? pgpFigs[f.key] ?? null, 4)]));
  const runDetails = details(reps);
  const meta = {
    date: new Date().toISOString(), mode: quick ? 'quick' : 'full', repetitions: cfg.reps, duration_s: cfg.durationS, warmup_s: cfg.warmupS,
    connections: cfg.connections, elapsed_s: Math.round((Date.now() - started) / 1000),
    machine: { node: process.version, cpu: cpus()[0]?.model ?? 'unknown', cores: cpus().length, platform: `${process.platform} ${process.arch}`, pinned: pinning() },
    load_generator: `autocannon ${JSON.parse(readFileSync(join(ROOT, 'node_modules/autocannon/package.json'), 'utf8')).version}`,
    runs: runDetails,
    per_repetition: perRep(reps),
    login: loginMeta(reps),
    cli: { node_e_0_ms: round(median(reps.map((r) => r.cli?.node_ms)), 1), plain_script_ms: round(median(reps.map((r) => r.cli?.plain_ms)), 1), tool: reps[0]?.cli?.tool ?? null },
    bulk_revoke_wall_ms: round(median(reps.map((r) => r.bulk?.wall_ms)), 0),
    pg_bulk_revoke_wall_ms: round(median(reps.map((r) => r.pgBulk?.wall_ms)), 0),
    postgres: pgMeta,
    events: ev?.meta ?? null,
    pg_push: pgp?.meta ?? null,
    notes,
  };
  mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
  writeFileSync(join(ROOT, 'bench/results/latest.json'), JSON.stringify({ ...out, meta }, null, 2) + '\n');
  log('');
  log(figuresTable(figs, { measuredOnly: only !== null }));
  if (want('events')) log(eventsTable(ev?.figs ?? {}));
  if (want('pg-push')) log(pgPushTable(pgp?.figs ?? {}));
  log(detailsTable(runDetails));
  log(`CLI baselines: node -e 0 ${meta.cli.node_e_0_ms ?? 'n/a'} ms, plain better-sqlite3 script ${meta.cli.plain_script_ms ?? 'n/a'} ms`);
  log(`${meta.machine.cpu}, ${meta.machine.cores} cores, Node ${process.version}; ${meta.elapsed_s} s; written to bench/results/latest.json`);
  for (const n of notes) log(`note: ${n}`);
}

try {
  await main();
} finally {
  killAll();
  await dropPgOnce().catch((err) => log(`could not drop the PostgreSQL schema: ${err instanceof Error ? err.message : String(err)}`));
  if (!flags.keep) rmSync(workDir, { recursive: true, force: true });
}
