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
 *        --keep (keep the work directory with the servers' logs).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, readdirSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { coreCount, killAll, killGroup, pinning, runToEnd, SERVER_CORE } from './lib/proc.js';
import { isActive, postForm, runLoad, runLoadAcross, runLoginLoop } from './lib/measure.js';
import { bulkRevokePg, copyToPg, dropAllPg, preparePg } from './lib/postgres.js';
import { performance } from 'node:perf_hooks';
import { CLIENT, CODE_CLIENT, REQUESTS, serveKnows, startCeiling, startPeer, startTokenctl, tokenctlServeMissing } from './lib/contenders.js';
import { copyStore, prepareStores } from './lib/stores.js';
import { bulkRevoke, cliColdStarts } from './lib/cli.js';
import { details, detailsTable, figures, figuresTable, FIGURES, median, perRep, round } from './lib/report.js';
import { EVENT_FIGURES, eventsTable, runEventsBench } from './events.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false }, reps: { type: 'string' }, duration: { type: 'string' },
    'no-build': { type: 'boolean', default: false }, 'rebuild-stores': { type: 'boolean', default: false }, keep: { type: 'boolean', default: false },
  },
});
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
 * @param {{ fresh?: boolean, checkActive?: boolean, check?: (url: string, lines: string[], r: import('./lib/measure.js').LoadResult) => Promise<void> }} [opt]
 *   `check`: what to verify after a fresh run instead of the revocation's check.
 */
async function measure(rep, key, start, req, tokenFile, opt = {}) {
  const server = await start();
  try {
    const tokens = readFileSync(tokenFile, 'utf8').split('\n').filter(Boolean);
    const url = server.url + (key.startsWith('peer.') ? REQUESTS.peer.introspect.path : REQUESTS.tokenctl.introspect.path);
    if (opt.checkActive && !(await isActive(url, /** @type {string} */ (tokens[0]), CLIENT))) throw new Error(`${key}: the first token is not active before the run`);
    const r = await runLoad({ label: `${key}-${rep.n}`, server, ...req, tokenFile, fresh: opt.fresh, connections: cfg.connections, warmupS: cfg.warmupS, durationS: cfg.durationS, workDir });
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
    log(`  ${key.padEnd(30)} ${Math.round(r.rps).toLocaleString('en-US').padStart(7)} req/s  p99 ${r.latency.p99} ms  server CPU ${r.serverCpuShare.toFixed(2)}  loadgen CPU ${r.loadCpuShare.toFixed(2)}  RSS ${r.serverRssMb.toFixed(0)} MB`);
  } finally {
    if (!('keepAlive' in server)) killGroup(server.child);
  }
}

/**
 * The 2-node PostgreSQL run: two `serve` processes on one schema, the connections split across
 * them (one generator each), then a cross-node check: a token revoked through node A must read
 * inactive on node B at once.
 * @param {import('./lib/report.js').Rep} rep @param {string} key @param {string} db
 * @param {string} tokenFile @param {(string|null)[]} cores
 */
async function measureTwoNodes(rep, key, db, tokenFile, cores) {
  /** @type {Awaited<ReturnType<typeof startTokenctl>>[]} */
  const servers = [];
  try {
    for (const [i, name] of ['bench-a', 'bench-b'].entries()) servers.push(await startTokenctl(workDir, `tkpg2-${name}-${rep.n}`, db, [], { node: name, core: cores[i] ?? null }));
    const tokens = readFileSync(tokenFile, 'utf8').split('\n').filter(Boolean);
    const [a, b] = servers.map((x) => x.url + REQUESTS.tokenctl.introspect.path);
    for (const u of [a, b]) if (!(await isActive(/** @type {string} */ (u), /** @type {string} */ (tokens[0]), CLIENT))) throw new Error(`${key}: the first token is not active before the run`);
    const r = await runLoadAcross({ label: `${key}-${rep.n}`, servers, ...REQUESTS.tokenctl.introspect, tokenFile, connections: cfg.connections, warmupS: cfg.warmupS, durationS: cfg.durationS, workDir });
    if (r.non2xx + r.errors + r.timeouts > 0) note(`${key}: ${r.non2xx} non-2xx answers, ${r.errors} errors, ${r.timeouts} timeouts`);
    // One token per repetition (from the end of the file) revoked on A, read on B.
    const victim = /** @type {string} */ (tokens[tokens.length - 1 - rep.n]);
    const revoked = await postForm(/** @type {{url: string}} */ (servers[0]).url + REQUESTS.tokenctl.revoke.path, `token=${encodeURIComponent(victim)}${REQUESTS.tokenctl.revoke.suffix}`);
    if (revoked.status !== 200) throw new Error(`${key}: revocation on node A answered ${revoked.status}`);
    if (await isActive(/** @type {string} */ (b), victim, CLIENT)) throw new Error(`${key}: a token revoked on node A still reads active on node B`);
    rep.runs[key] = r;
    log(`  ${key.padEnd(30)} ${Math.round(r.rps).toLocaleString('en-US').padStart(7)} req/s  p99 ${r.latency.p99} ms  server CPU ${r.serverCpuShare.toFixed(2)} (2 nodes)  loadgen CPU ${r.loadCpuShare.toFixed(2)}  RSS ${r.serverRssMb.toFixed(0)} MB`);
  } finally {
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

async function main() {
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
  if (tk) {
    await attempt('preparing the PostgreSQL store (the PostgreSQL rows are null)', async () => {
      const pg = await preparePg({ sqlite: /** @type {string} */ (t1k), log });
      pgStore = pg;
      dropPg = pg.drop;
      pgMeta = {
        database: pg.base, schema: pg.schema, pool_size: 'serve default', one_node_core: pinning() ? SERVER_CORE : 'not pinned',
        two_nodes_cores: twoNodeCores[0] === null ? 'not pinned' : twoNodeCores.join(' and '),
      };
      if (twoNodeCores[0] === null && pinning()) note(`PostgreSQL 2 nodes: not pinned (${cores} cores): the two nodes, PostgreSQL and the load generator share the cores`);
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
    await attempt('starting the peer', async () => {
      peer = await startPeer(workDir, `peer-${n}`, cfg.peerRevokePool);
    });
    const p = /** @type {Awaited<ReturnType<typeof startPeer>>|null} */ (peer);
    const keep = async () => ({ ...(/** @type {NonNullable<typeof p>} */ (p)), keepAlive: true });
    try {
      const introspection = flip([
        () => measure(rep, 'ceiling.introspect', () => startCeiling(workDir, `ceiling-${n}`), REQUESTS.ceiling.introspect, ceilingTokens),
        p && (() => measure(rep, 'peer.introspect', keep, REQUESTS.peer.introspect, p.introspectFile, { checkActive: true })),
        tk && (() => measure(rep, 'tokenctl.introspect', () => startTokenctl(workDir, `tk1k-${n}`, /** @type {string} */ (t1k)), REQUESTS.tokenctl.introspect, s.t1k.accessFile, { checkActive: true })),
        // Metrics on (serve --metrics-port 0), beside the run without: metrics_cost_ratio.
        tk && (() => measure(rep, 'tokenctl.introspect_metrics', () => startTokenctl(workDir, `tk1km-${n}`, /** @type {string} */ (t1k), [], { serveArgs: ['--metrics-port', '0'] }), REQUESTS.tokenctl.introspect, s.t1k.accessFile, { checkActive: true })),
        tk && (() => measure(rep, 'tokenctl.introspect_1m', () => startTokenctl(workDir, `tk1m-${n}`, /** @type {string} */ (t1m)), REQUESTS.tokenctl.introspect, s.t1m.accessFile, { checkActive: true })),
        tk && pg && (() => measure(rep, 'tokenctl.introspect_pg_1node', () => startTokenctl(workDir, `tkpg1-${n}`, pg.url, [], { node: 'bench-a' }), REQUESTS.tokenctl.introspect, s.t1k.accessFile, { checkActive: true })),
        tk && pg && (() => measureTwoNodes(rep, 'tokenctl.introspect_pg_2nodes', pg.url, s.t1k.accessFile, twoNodeCores)),
      ]);
      for (const run of introspection.filter(Boolean)) await attempt('an introspection run', run);
      const revocation = flip([
        p && (() => measure(rep, 'peer.revoke', keep, REQUESTS.peer.revoke, p.revokeFile, { fresh: true })),
        tk && (async () => {
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
        tk && pg && (async () => {
          // The same pool of fresh tokens, copied into a schema of this repetition's own.
          const copy = await copyToPg({ base: pg.cleanBase, sqlite: copyStore(s.pool.db, join(workDir, `pgpool-${n}.db`)), log, what: 'the revocation pool' });
          try {
            await measure(rep, 'tokenctl.revoke_pg', () => startTokenctl(workDir, `tkpgpool-${n}`, copy.url, [], { node: 'bench-a' }), REQUESTS.tokenctl.revoke, s.pool.accessFile, { fresh: true });
            await measure(rep, 'tokenctl.refresh_pg', () => startTokenctl(workDir, `tkpgrefresh-${n}`, copy.url, [], { node: 'bench-a' }), REQUESTS.tokenctl.refresh, s.pool.refreshFile);
          } finally {
            await copy.drop();
          }
        }),
      ]);
      for (const run of revocation.filter(Boolean)) await attempt('a revocation/refresh run', run);
      if (tk && serveKnows('--dev-login')) await attempt('the login round trip', () => measureLogin(rep, s.pool));
    } finally {
      if (p) killGroup(p.child);
    }
    if (s) {
      await attempt('the CLI cold start', async () => {
        const token = readFileSync(s.t1k.accessFile, 'utf8').split('\n')[0] ?? '';
        rep.cli = await cliColdStarts({ db: /** @type {string} */ (t1k), token, runs: cfg.cliRuns });
        log(`  cli: node -e 0 ${rep.cli.node_ms.toFixed(0)} ms, plain script ${rep.cli.plain_ms.toFixed(0)} ms, tokenctl introspect ${rep.cli.tokenctl_ms.toFixed(0)} ms`);
      });
      await attempt('the bulk revocation', async () => {
        rep.bulk = await bulkRevoke({ template: s.bulk.db, workDir, rep: n, expect: 100_000 });
        log(`  bulk revoke 100k: ${rep.bulk.elapsed_ms} ms (command's own), ${rep.bulk.wall_ms.toFixed(0)} ms wall`);
      });
      if (pg) {
        await attempt('the PostgreSQL bulk revocation', async () => {
          rep.pgBulk = await bulkRevokePg({ base: pg.cleanBase, sqlite: copyStore(s.bulk.db, join(workDir, `pgbulk-${n}.db`)), log, expect: 100_000 });
          log(`  PostgreSQL bulk revoke 100k: ${rep.pgBulk.elapsed_ms} ms (command's own), ${rep.pgBulk.wall_ms.toFixed(0)} ms wall, longest stall of a revocation ${rep.pgBulk.max_stall_ms} ms (${rep.pgBulk.probes} probes)`);
        });
      }
    }
  }

  // Security events (bench/events.js): their cost to revocation, and a resource server's view.
  /** @type {Awaited<ReturnType<typeof runEventsBench>>|null} */
  let events = null;
  if (tk) {
    log('security events');
    await attempt('the events figures', async () => {
      events = await runEventsBench({ pool: s.pool, workDir, reps: cfg.reps, durationS: cfg.durationS, warmupS: cfg.warmupS, connections: cfg.connections, log, note });
    });
  }
  const ev = /** @type {Awaited<ReturnType<typeof runEventsBench>>|null} */ (events);

  await attempt('dropping the PostgreSQL schema', dropPgOnce);
  if (pg) log(`PostgreSQL schema ${pg.schema} dropped`);

  const figs = figures(reps);
  const out = Object.fromEntries([...FIGURES, ...EVENT_FIGURES].map((f) => [f.key, round(figs[f.key] ?? ev?.figs[f.key] ?? null, 4)]));
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
    notes,
  };
  mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
  writeFileSync(join(ROOT, 'bench/results/latest.json'), JSON.stringify({ ...out, meta }, null, 2) + '\n');
  log('');
  log(figuresTable(figs));
  log(eventsTable(ev?.figs ?? {}));
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
