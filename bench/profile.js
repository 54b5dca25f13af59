#!/usr/bin/env node
/**
 * Where the tokenctl server spends its time under one of the benchmark's loads: starts
 * `tokenctl serve` under `node --cpu-prof` (pinned like in the benchmark), drives it with the
 * same load generator, stops it with SIGTERM so that V8 writes the profile, and prints the
 * functions with the most self time and the time by package, as shares of the busy (not idle)
 * time.
 *
 * Usage: node bench/profile.js [introspect|introspect_1m|revoke|revoke_events|revoke_pg|refresh|ceiling] [--seconds N]
 * (`revoke_pg`: revocations on a PostgreSQL copy of the pool store, in TOKENCTL_BENCH_PG or the bench's
 * default database, as pg_revocation_rps; the schema is dropped at the end.)
 * (`revoke_events`: revocations with a poll receiver registered and polling, as events_cost_ratio's "with".)
 * (`ceiling`: the bare node:http server under the introspection load, to compare with.)
 * The profile is kept in bench/results/<kind>.cpuprofile (open it in Chrome DevTools or
 * speedscope).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { killAll, killGroup, startServer } from './lib/proc.js';
import { runLoad } from './lib/measure.js';
import { REQUESTS, startTokenctl, tokenctlServeMissing } from './lib/contenders.js';
import { copyStore, prepareStores } from './lib/stores.js';
import { addReceiver, barePoller } from './events.js';
import { copyToPg, DEFAULT_PG } from './lib/postgres.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const { values, positionals } = parseArgs({ options: { seconds: { type: 'string', default: '5' } }, allowPositionals: true });
const kind = positionals[0] ?? 'introspect';
const log = (/** @type {string} */ s) => process.stdout.write(s + '\n');

/**
 * Where each module starts in the CLI bundle (dist/main/index.cjs), from the `// <path>` comment
 * esbuild writes before each: [first line (0-based), path], in order.
 * @returns {[number, string][]}
 */
function bundleModules() {
  const bundle = join(ROOT, 'dist/main/index.cjs');
  if (!existsSync(bundle)) return [];
  /** @type {[number, string][]} */
  const starts = [];
  readFileSync(bundle, 'utf8')
    .split('\n')
    .forEach((text, i) => {
      const m = /^\/\/ ((?:node_modules|dist)\/\S+)$/.exec(text);
      if (m) starts.push([i, /** @type {string} */ (m[1])]);
    });
  return starts;
}

/**
 * The module of the bundle that holds `line` (0-based), or null.
 * @param {[number, string][]} starts @param {number} line
 */
function moduleAt(starts, line) {
  let lo = 0;
  let hi = starts.length - 1;
  let found = null;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const [start, path] = /** @type {[number, string]} */ (starts[mid]);
    if (start <= line) {
      found = path;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

/**
 * Self time per function and per package from a .cpuprofile. Functions of the CLI bundle are
 * named by the module they come from (dist/… or node_modules/…).
 * @param {string} file
 */
function summarize(file) {
  const starts = bundleModules();
  /** @type {{ nodes: { id: number, callFrame: { functionName: string, url: string, lineNumber: number } }[], samples: number[], timeDeltas: number[] }} */
  const p = JSON.parse(readFileSync(file, 'utf8'));
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  /** @type {Map<string, number>} */
  const fn = new Map();
  /** @type {Map<string, number>} */
  const pkg = new Map();
  let total = 0;
  p.samples.forEach((id, i) => {
    const dt = p.timeDeltas[i] ?? 0;
    const cf = byId.get(id)?.callFrame;
    if (!cf || cf.functionName === '(idle)') return;
    total += dt;
    const url = cf.url.replace(/^file:\/\//, '').replace(ROOT, '');
    const where = url === 'dist/main/index.cjs' ? (moduleAt(starts, cf.lineNumber) ?? url) : url;
    const key = `${cf.functionName || '(anonymous)'}  ${where ? `${where}:${cf.lineNumber + 1}` : ''}`;
    fn.set(key, (fn.get(key) ?? 0) + dt);
    const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(where);
    const group = m ? m[1] : where.startsWith('dist/') ? `tokenctl ${where.split('/')[1]}` : where.startsWith('node:') ? 'node core' : cf.functionName.startsWith('(') ? cf.functionName : 'native/other';
    pkg.set(/** @type {string} */ (group), (pkg.get(/** @type {string} */ (group)) ?? 0) + dt);
  });
  const top = (/** @type {Map<string, number>} */ m, /** @type {number} */ n) =>
    [...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, v]) => `${((100 * v) / total).toFixed(1).padStart(5)}%  ${k}`);
  return { byPackage: top(pkg, 15), byFunction: top(fn, 25) };
}

async function main() {
  const missing = await tokenctlServeMissing();
  if (missing) throw new Error(`cannot profile: ${missing}`);
  const req = kind === 'refresh' ? REQUESTS.tokenctl.refresh : kind === 'revoke' || kind === 'revoke_events' || kind === 'revoke_pg' ? REQUESTS.tokenctl.revoke : REQUESTS.tokenctl.introspect;
  const stores = await prepareStores({ quick: false, rebuild: false, log });
  const s = kind === 'introspect_1m' ? stores.t1m : kind === 'introspect' || kind === 'ceiling' ? stores.t1k : stores.pool;
  if (!s) throw new Error('stores missing');
  const workDir = mkdtempSync(join(tmpdir(), 'tokenctl-profile-'));
  /** @type {Awaited<ReturnType<typeof copyToPg>> | null} */
  let pg = null;
  try {
    const copy = copyStore(s.db, join(workDir, 'tokens.db'));
    if (kind === 'revoke_pg') pg = await copyToPg({ base: process.env.TOKENCTL_BENCH_PG || DEFAULT_PG, sqlite: copy, log, what: 'the revocation pool' });
    const db = pg?.url ?? copy;
    if (kind === 'revoke_events') await addReceiver(db);
    const profDir = join(workDir, 'prof');
    const profArgs = ['--cpu-prof', `--cpu-prof-dir=${profDir}`];
    const server =
      kind === 'ceiling'
        ? await startServer('ceiling', process.execPath, [...profArgs, join(ROOT, 'bench/servers/ceiling.js')], { log: join(workDir, 'ceiling.log') })
        : await startTokenctl(workDir, 'serve', db, profArgs);
    const stopPoller = kind === 'revoke_events' ? barePoller(server.url) : null;
    const r = await runLoad({
      label: kind, server, ...req, tokenFile: kind === 'refresh' ? s.refreshFile : s.accessFile, fresh: kind === 'revoke' || kind === 'revoke_events' || kind === 'revoke_pg',
      connections: 50, warmupS: 1, durationS: Number(values.seconds), workDir,
    });
    log(`${kind}: ${Math.round(r.rps)} req/s, p99 ${r.latency.p99} ms, server CPU ${r.serverCpuShare.toFixed(2)}`);
    if (stopPoller) log(`poller: ${JSON.stringify(await stopPoller())}`);
    process.kill(server.pid, 'SIGTERM');
    await new Promise((resolve) => {
      server.child.once('exit', resolve);
      setTimeout(resolve, 15_000);
    });
    killGroup(server.child);
    const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
    if (!file) throw new Error(`no profile written (did the server exit on SIGTERM? see ${join(workDir, 'serve.log')}, removed with the work directory)`);
    mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
    const kept = join(ROOT, 'bench/results', `${kind}.cpuprofile`);
    renameSync(join(profDir, file), kept);
    const { byPackage, byFunction } = summarize(kept);
    log('\nself time by package:\n' + byPackage.join('\n'));
    log('\nself time by function:\n' + byFunction.join('\n'));
    log(`\nprofile: ${kept} (includes start-up and warm-up)`);
  } finally {
    await pg?.drop();
    rmSync(workDir, { recursive: true, force: true });
  }
}

try {
  await main();
} finally {
  killAll();
}
