#!/usr/bin/env node
/**
 * Refresh throughput of two builds, alternated (A B B A A B …), with the ceiling (bare node:http)
 * measured in every round: what `npm run bench` reports as `refresh_rps`, `refresh_p99_ms` and
 * `refresh_ratio_to_ceiling`, for two builds on the same machine minutes apart. Each run is one
 * `tokenctl serve` (pinned like the bench's) on a fresh copy of the store, 50 connections,
 * the bench's refresh request, a warm-up, then the measured run (bench/lib).
 *
 * Usage: node bench/refresh-ab.js --db POOL.db --tokens REFRESH.txt --a DIR --b DIR
 *          [--rounds 4] [--warmup 2] [--seconds 5] [--kind refresh|refresh_dpop|revoke|introspect|authorization_code]
 *          [--b-kind KIND] (B runs another load: `--kind refresh --b-kind refresh_dpop --a . --b .`
 *          is the bench's dpop_refresh_ratio, refresh with a DPoP proof ÷ without, on one build)
 *          [--a-node-args '…'] [--b-node-args '…'] (Node/V8 options of each side's server)
 *          [--a-pg] [--b-pg] [--pg URL] (that side's store: a PostgreSQL copy of POOL.db, made by
 *          `tokenctl migrate` into a schema of its own in the database of --pg, default
 *          TOKENCTL_BENCH_PG or postgres://postgres@127.0.0.1:5432/test, dropped after the run;
 *          `--a DIR --b DIR --b-pg` gives a build's PostgreSQL ÷ SQLite ratio, as the bench's)
 * (`--kind revoke`: each request a fresh access token of --tokens, as the bench's revocation run;
 * `--kind authorization_code`: each request a fresh code of --tokens, the pool store's -codes.txt,
 * as the bench's code exchange run; `--a DIR --b DIR` with one DIR twice is its A/A.)
 * DIR: a built tokenctl (bin/, dist/, package.json, node_modules); POOL.db: a bench pool store
 * (node bench/setup-store.js --access 250000 --refresh 20000). Only 127.0.0.1 is ever targeted.
 * Prints one JSON line per run and a summary: medians, and the median of the pairwise B ÷ A ratios.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { REQUESTS, startCeiling } from './lib/contenders.js';
import { runLoad } from './lib/measure.js';
import { killAll, killGroup, startServer } from './lib/proc.js';
import { median } from './lib/report.js';
import { copyStore } from './lib/stores.js';
import { copyToPg, DEFAULT_PG } from './lib/postgres.js';

const { values } = parseArgs({
  options: {
    db: { type: 'string' },
    tokens: { type: 'string' },
    a: { type: 'string' },
    b: { type: 'string' },
    rounds: { type: 'string', default: '4' },
    warmup: { type: 'string', default: '2' },
    seconds: { type: 'string', default: '5' },
    kind: { type: 'string', default: 'refresh' },
    'b-kind': { type: 'string' },
    'a-node-args': { type: 'string', default: '' },
    'b-node-args': { type: 'string', default: '' },
    'a-pg': { type: 'boolean', default: false },
    'b-pg': { type: 'boolean', default: false },
    pg: { type: 'string', default: process.env.TOKENCTL_BENCH_PG || DEFAULT_PG },
  },
});
/** `--kind revoke` (with --tokens: access tokens), `introspect` or `authorization_code`: the same A/B of the other loads. */
/** @param {string} name */
function kindOf(name) {
  const k = /** @type {'refresh'|'refreshDpop'|'revoke'|'introspect'|'authorizationCode'} */ ({ authorization_code: 'authorizationCode', refresh_dpop: 'refreshDpop' }[name] ?? name);
  if (!['refresh', 'refreshDpop', 'revoke', 'introspect', 'authorizationCode'].includes(k)) throw new Error(`--kind must be refresh, refresh_dpop, revoke, introspect or authorization_code, not ${name}`);
  return k;
}
const kind = kindOf(String(values.kind));
const kinds = { a: kind, b: kindOf(String(values['b-kind'] ?? values.kind)) };
/** Loads whose every request spends its token or code: each run starts from the top of --tokens on its fresh copy. */
const fresh = kind === 'revoke' || kind === 'authorizationCode';
if (!values.db || !values.tokens || !values.a || !values.b) {
  console.error('usage: node bench/refresh-ab.js --db POOL.db --tokens REFRESH.txt --a DIR --b DIR [--rounds 4] [--warmup 2] [--seconds 5]');
  process.exit(2);
}
const builds = { a: resolve(values.a), b: resolve(values.b) };
/** Node options of each side (`--a-node-args '--max-semi-space-size=32'`): the same build with other V8 settings. */
const nodeArgs = { a: String(values['a-node-args']).split(' ').filter(Boolean), b: String(values['b-node-args']).split(' ').filter(Boolean) };
const workDir = mkdtempSync(join(tmpdir(), 'tokenctl-refresh-ab-'));
const load = { connections: 50, warmupS: Number(values.warmup), durationS: Number(values.seconds), workDir };

/** `tokenctl serve` of one build, as bench/lib/contenders.js starts this tree's. */
function startBuild(/** @type {string} */ root, /** @type {string} */ name, /** @type {string} */ db, /** @type {string[]} */ nodeArgs) {
  const args = [...nodeArgs, join(root, 'bin/run.js'), 'serve', '--host', '127.0.0.1', '--port', '0', '--db', db, '--log-level', 'warn'];
  return startServer('tokenctl serve', process.execPath, args, { log: join(workDir, `${name}.log`), env: { ...process.env, NODE_ENV: 'production' } });
}

/** @type {{ a: number[], b: number[], ratio: number[], perCpuRatio: number[], p99: { a: number[], b: number[] }, ceiling: number[], cpu: { a: number[], b: number[] } }} */
const seen = { a: [], b: [], ratio: [], perCpuRatio: [], p99: { a: [], b: [] }, ceiling: [], cpu: { a: [], b: [] } };
try {
  for (let round = 0; round < Number(values.rounds); round++) {
    const ceiling = await startCeiling(workDir, `ceiling-${round}`);
    try {
      const r = await runLoad({ label: `ceiling-${round}`, server: ceiling, ...REQUESTS.ceiling.introspect, tokenFile: values.tokens, ...load });
      seen.ceiling.push(r.rps);
      console.log(JSON.stringify({ round, run: 'ceiling', rps: Math.round(r.rps), p99: r.latency.p99 }));
    } finally {
      killGroup(ceiling.child);
    }
    const order = /** @type {('a'|'b')[]} */ (round % 2 ? ['b', 'a'] : ['a', 'b']);
    /** @type {Record<string, number>} */
    const rps = {};
    for (const which of order) {
      const db = copyStore(values.db, join(workDir, `${which}-${round}.db`));
      const pg = values[`${which}-pg`] ? await copyToPg({ base: String(values.pg), sqlite: db, log: () => {}, what: 'the pool store', root: builds[which] }) : null;
      const server = await startBuild(builds[which], `${which}-${round}`, pg?.url ?? db, nodeArgs[which]);
      try {
        const r = await runLoad({ label: `${which}-${round}`, server, ...REQUESTS.tokenctl[kinds[which]], tokenFile: values.tokens, fresh, ...load });
        if (r.non2xx > 0 || r.errors > 0) throw new Error(`${which}: ${r.non2xx} non-2xx answers, ${r.errors} errors`);
        rps[which] = r.rps;
        seen[which].push(r.rps);
        seen.p99[which].push(r.latency.p99);
        seen.cpu[which].push(r.serverCpuShare);
        console.log(JSON.stringify({ round, run: which, rps: Math.round(r.rps), p99: r.latency.p99, ratio_to_ceiling: +(r.rps / /** @type {number} */ (seen.ceiling.at(-1))).toFixed(4), server_cpu: +r.serverCpuShare.toFixed(2) }));
      } finally {
        killGroup(server.child);
        await pg?.drop();
        for (const suffix of ['', '-wal', '-shm']) rmSync(db + suffix, { force: true });
      }
    }
    seen.ratio.push(/** @type {number} */ (rps.b) / /** @type {number} */ (rps.a));
    // Requests per second of server CPU: the figure least disturbed by other work on the machine.
    seen.perCpuRatio.push((/** @type {number} */ (rps.b) / /** @type {number} */ (seen.cpu.b.at(-1))) / (/** @type {number} */ (rps.a) / /** @type {number} */ (seen.cpu.a.at(-1))));
  }
  const m = (/** @type {number[]} */ xs) => +median(xs).toFixed(4);
  console.log(JSON.stringify({
    summary: true, kind, b_kind: kinds.b, a: builds.a, b: builds.b,
    ceiling_rps: m(seen.ceiling), a_rps: m(seen.a), b_rps: m(seen.b),
    a_ratio_to_ceiling: +(median(seen.a) / median(seen.ceiling)).toFixed(4), b_ratio_to_ceiling: +(median(seen.b) / median(seen.ceiling)).toFixed(4),
    a_p99_ms: m(seen.p99.a), b_p99_ms: m(seen.p99.b), b_over_a_pairwise_median: m(seen.ratio), b_over_a_pairwise: seen.ratio.map((x) => +x.toFixed(3)),
    a_cpu: m(seen.cpu.a), b_cpu: m(seen.cpu.b), b_over_a_per_cpu_pairwise_median: m(seen.perCpuRatio), b_over_a_per_cpu_pairwise: seen.perCpuRatio.map((x) => +x.toFixed(3)),
  }));
} finally {
  killAll();
  rmSync(workDir, { recursive: true, force: true });
}
