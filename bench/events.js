#!/usr/bin/env node
/**
 * Security events (docs/events.md) in the benchmark: what they cost the server, and what they buy a
 * resource server using `tokenctl/resource-server` (the built dist/resource-server).
 *
 * - `events_cost_ratio`: revocation throughput (fresh tokens, 50 connections, as `revocation_rps`)
 *   with a poll receiver registered and polling (a bare RFC 8936 loop that acknowledges every SET,
 *   so that the figure is the server's cost: writing the events, signing the SETs, serving the
 *   polls) ÷ without any receiver; two fresh copies of the pool store, the two runs alternated.
 * - `event_to_refusal_p99_ms`: a resource server (the module, polling) serves a stream of requests
 *   over a working set of tokens while revocations go on in the background; every 50 ms a cached
 *   token of the working set is revoked over HTTP, and the time from the revocation's 200 to the
 *   module's first refusal of it is recorded; p99 of those.
 * - `rs_cache_hit_ratio`: the module's cache hits ÷ all its requests during that phase.
 *
 * `node bench/events.js [--quick]` runs it alone (build first); `bench/run.js` runs it after its
 * repetitions and adds the figures to its table and bench/results/latest.json.
 */
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { killAll, killGroup, LOAD_CORE, runToEnd, startChild } from './lib/proc.js';
import { runLoad } from './lib/measure.js';
import { CLIENT, REQUESTS, startTokenctl, tokenctlServeMissing } from './lib/contenders.js';
import { copyStore, prepareStores } from './lib/stores.js';
import { median, round } from './lib/report.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const POLL_WORKER = fileURLToPath(new URL('./lib/poll-worker.js', import.meta.url));
let pollers = 0;
const BASIC = 'Basic ' + Buffer.from(`${CLIENT.id}:${CLIENT.secret}`).toString('base64');

/** The figures this file adds, in the shape of lib/report.js's FIGURES. */
export const EVENT_FIGURES = [
  { key: 'event_to_refusal_p99_ms', label: 'revocation acknowledged → resource server refuses, p99 ms', target: '≤ 1000', ok: (/** @type {number} */ v) => v <= 1000 },
  { key: 'rs_cache_hit_ratio', label: 'resource server requests answered from its cache', target: null },
  { key: 'events_cost_ratio', label: 'revocation with a poll receiver polling / without', target: '≥ 0.9', ok: (/** @type {number} */ v) => v >= 0.9 },
];

/** Registers the poll receiver `rs` for client `bench` in a store (the CLI, as an operator would). */
export async function addReceiver(/** @type {string} */ db) {
  const r = await runToEnd(process.execPath, [join(ROOT, 'bin/run.js'), 'receiver', 'add', 'rs', '--poll', '--client', CLIENT.id, '--audience', 'rs', '--db', db, '--json'], { timeoutMs: 60_000 });
  if (r.code !== 0) throw new Error(`receiver add failed (exit ${r.code}): ${(r.stderr || r.stdout).trim().split('\n')[0]}`);
}

/**
 * The bench's bare RFC 8936 receiver (bench/lib/poll-loop.js) in a process of its own (bench/lib/poll-worker.js), pinned to the load
 * generator's core like every client of the server: the receiver's work (reading ~130 kB answers
 * twenty times a second; it decodes them once stopped) is the resource server's, not the server's,
 * and in this process (not pinned) it could run on the server's core. Returns stop() → what it
 * received, and the share of a core it used while polling.
 */
export function barePoller(/** @type {string} */ url) {
  const log = join(tmpdir(), `tokenctl-bench-poller-${process.pid}-${++pollers}.log`);
  const child = startChild(process.execPath, [POLL_WORKER, url, BASIC], { core: LOAD_CORE, log });
  /** @type {Promise<{ sets: number, revocations: number, cpuShare: number }>} */
  const result = new Promise((resolve, reject) => {
    let out = '';
    child.stdout?.setEncoding('utf8').on('data', (d) => (out += d));
    child.on('exit', (code, signal) => {
      const line = out.split('\n').find((l) => l.startsWith('result '));
      const why = line ? '' : readFileSync(log, 'utf8').trim().slice(-300);
      rmSync(log, { force: true });
      if (line) resolve(JSON.parse(line.slice(7)));
      else reject(new Error(`the bench's poller stopped (${signal ?? `exit ${code}`}) without a result: ${why}`));
    });
  });
  /** @type {Promise<{ sets: number, revocations: number, cpuShare: number }>|undefined} */
  let stopping;
  return async () => {
    stopping ??= (child.kill('SIGTERM'), result);
    return stopping;
  };
}


/** One POST /oauth/revocation of `token`, as client bench; resolves on the 200. */
function revoke(/** @type {string} */ url, /** @type {string} */ token, /** @type {Agent} */ agent) {
  const body = `token=${encodeURIComponent(token)}${REQUESTS.tokenctl.revoke.suffix}`;
  return new Promise((resolve, reject) => {
    const req = request(url + '/oauth/revocation', { method: 'POST', agent, headers: { 'content-type': 'application/x-www-form-urlencoded' } }, (res) => {
      res.resume().on('end', () => (res.statusCode === 200 ? resolve(undefined) : reject(new Error(`revocation answered ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const sleep = (/** @type {number} */ ms) => new Promise((r) => setTimeout(r, ms));

/** Removes a store copy once its server is gone: a full run makes 15 of them. */
function dropCopy(/** @type {string} */ db) {
  for (const suffix of ['', '-wal', '-shm']) rmSync(db + suffix, { force: true });
}

/**
 * The resource server phase: the module polling one serve, a stream of requests, background
 * revocations, and timed victims.
 * @param {{ url: string, tokens: string[], seconds: number }} o
 */
async function refusalPhase(o) {
  const { ResourceServer } = await import(pathToFileURL(join(ROOT, 'dist/resource-server/index.js')).href);
  const rs = new ResourceServer({ url: o.url, clientId: CLIENT.id, clientSecret: CLIENT.secret, audience: 'rs', accept: { audience: 'https://api.example.test' }, cache: { maxAgeMs: 10 * 60_000 } });
  const agent = new Agent({ keepAlive: true, maxSockets: 8 });
  try {
    await Promise.race([rs.ready(), sleep(10_000).then(() => Promise.reject(new Error('the event stream did not come up in 10 s')))]);
    const working = o.tokens.slice(-2000);
    const background = o.tokens.slice(0, o.tokens.length - 2000);
    for (let i = 0; i < working.length; i += 100) await Promise.all(working.slice(i, i + 100).map((t) => rs.verify(t)));
    const start = rs.stats();
    const end = Date.now() + o.seconds * 1000;
    let served = 0;
    // The stream: ~5,000 requests a second over the working set, in batches of 50 every 10 ms.
    const stream = (async () => {
      while (Date.now() < end) {
        await Promise.all(Array.from({ length: 50 }, () => rs.verify(working[Math.floor(Math.random() * working.length)]).catch(() => null)));
        served += 50;
        await sleep(10);
      }
    })();
    // Background revocations: ~200 a second, of tokens outside the working set.
    const churn = (async () => {
      let i = 0;
      while (Date.now() < end && i < background.length) {
        await Promise.all(background.slice(i, i + 10).map((t) => revoke(o.url, t, agent)));
        i += 10;
        await sleep(50);
      }
    })();
    // Victims: every 50 ms a cached token of the working set, revoked and timed until refused.
    /** @type {number[]} */
    const latencies = [];
    const victims = (async () => {
      let v = 0;
      while (Date.now() < end - 1500 && v < working.length) {
        const token = /** @type {string} */ (working[v++]);
        if ((await rs.verify(token)) === null) continue;
        await revoke(o.url, token, agent);
        const t0 = performance.now();
        // Checked on its own, beside the stream: each check is a cache lookup while the answer is kept.
        const timing = (async () => {
          while ((await rs.verify(token).catch(() => 'unavailable')) !== null) {
            if (performance.now() - t0 > 10_000) return Infinity;
            await sleep(2);
          }
          return performance.now() - t0;
        })();
        timing.then((ms) => latencies.push(ms));
        await sleep(50);
      }
    })();
    await Promise.all([stream, churn, victims]);
    await sleep(1500);
    const stats = rs.stats();
    const hits = stats.hits - start.hits;
    const misses = stats.misses - start.misses;
    latencies.sort((a, b) => a - b);
    const p99 = latencies.length ? /** @type {number} */ (latencies[Math.min(latencies.length - 1, Math.ceil(latencies.length * 0.99) - 1)]) : null;
    return { p99_ms: p99, p50_ms: latencies.length ? latencies[latencies.length >> 1] ?? null : null, samples: latencies.length, hit_ratio: hits / (hits + misses), served, events: stats.events, revocations: stats.revocations };
  } finally {
    await rs.close();
    agent.destroy();
  }
}

/**
 * Runs the events figures for `reps` repetitions on copies of the pool store.
 * @param {{ pool: { db: string, accessFile: string }, workDir: string, reps: number, durationS: number, warmupS: number, connections: number,
 *   log: (s: string) => void, note: (s: string) => void }} o
 */
export async function runEventsBench(o) {
  const tokens = readFileSync(o.pool.accessFile, 'utf8').split('\n').filter(Boolean);
  /** @type {{ cost?: number, withRps?: number, withoutRps?: number, sets: number, revocations: number, refusal?: Awaited<ReturnType<typeof refusalPhase>> }[]} */
  const reps = [];
  for (let n = 0; n < o.reps; n++) {
    const rep = /** @type {(typeof reps)[number]} */ ({ sets: 0, revocations: 0 });
    reps.push(rep);
    // A B B A (B A A B on odd repetitions): a drift of the machine within the repetition weighs on both alike.
    const order = n % 2 ? ['without', 'with', 'with', 'without'] : ['with', 'without', 'without', 'with'];
    /** @type {Record<string, number[]>} */
    const rps = { with: [], without: [] };
    for (const [i, which] of order.entries()) {
      const db = copyStore(o.pool.db, join(o.workDir, `events-${which}-${n}-${i}.db`));
      if (which === 'with') await addReceiver(db);
      const server = await startTokenctl(o.workDir, `events-${which}-${n}-${i}`, db);
      const stop = which === 'with' ? barePoller(server.url) : null;
      try {
        const r = await runLoad({ label: `events-${which}-${n}-${i}`, server, ...REQUESTS.tokenctl.revoke, tokenFile: o.pool.accessFile, fresh: true, connections: o.connections, warmupS: o.warmupS, durationS: o.durationS, workDir: o.workDir });
        if (r.non2xx + r.errors + r.timeouts > 0) o.note(`events ${which} a receiver: ${r.non2xx} non-2xx answers, ${r.errors} errors, ${r.timeouts} timeouts`);
        rps[which]?.push(r.rps);
        const got = stop ? await stop() : null;
        if (got) {
          rep.sets += got.sets;
          rep.revocations += got.revocations;
        }
        const polled = got === null ? '' : `  (${got.sets.toLocaleString('en-US')} SETs polled, ${got.revocations.toLocaleString('en-US')} revocations, the receiver at ${got.cpuShare.toFixed(2)} of a core)`;
        o.log(`  events.revoke_${which}_receiver`.padEnd(32) + `${Math.round(r.rps).toLocaleString('en-US').padStart(7)} req/s  p99 ${r.latency.p99} ms  server CPU ${r.serverCpuShare.toFixed(2)}${polled}`);
      } finally {
        if (stop) await stop();
        killGroup(server.child);
        dropCopy(db);
      }
    }
    const mean = (/** @type {number[]} */ xs) => (xs.length === 2 ? (/** @type {number} */ (xs[0]) + /** @type {number} */ (xs[1])) / 2 : undefined);
    rep.withRps = mean(rps.with ?? []);
    rep.withoutRps = mean(rps.without ?? []);
    if (rep.withRps && rep.withoutRps) rep.cost = rep.withRps / rep.withoutRps;
    const db = copyStore(o.pool.db, join(o.workDir, `events-rs-${n}.db`));
    await addReceiver(db);
    const server = await startTokenctl(o.workDir, `events-rs-${n}`, db);
    try {
      rep.refusal = await refusalPhase({ url: server.url, tokens: tokens.slice(0, 40_000), seconds: Math.max(5, o.durationS * 2) });
      const f = rep.refusal;
      o.log(`  events.rs                      refusal p50 ${f.p50_ms?.toFixed(0)} ms p99 ${f.p99_ms?.toFixed(0)} ms (${f.samples} revocations), cache hits ${(f.hit_ratio * 100).toFixed(2)} % of ${f.served.toLocaleString('en-US')} requests, ${f.events} SETs, ${f.revocations} revocations`);
    } finally {
      killGroup(server.child);
      dropCopy(db);
    }
  }
  const figs = {
    event_to_refusal_p99_ms: median(reps.map((r) => r.refusal?.p99_ms)),
    rs_cache_hit_ratio: median(reps.map((r) => r.refusal?.hit_ratio)),
    events_cost_ratio: median(reps.map((r) => r.cost)),
  };
  const meta = {
    revocation_with_receiver_rps: round(median(reps.map((r) => r.withRps)), 0),
    revocation_without_receiver_rps: round(median(reps.map((r) => r.withoutRps)), 0),
    event_to_refusal_p50_ms: round(median(reps.map((r) => r.refusal?.p50_ms)), 1),
    refusal_samples: reps.map((r) => r.refusal?.samples ?? 0),
    polled_sets: reps.map((r) => r.sets),
    polled_revocations: reps.map((r) => r.revocations),
    revocations_per_set: round(median(reps.map((r) => (r.sets > 0 ? r.revocations / r.sets : undefined))), 2),
    // The figure is their median: its spread shows how far one run's verdict can be trusted.
    events_cost_ratio_per_rep: reps.map((r) => (r.cost === undefined ? null : round(r.cost, 3))),
    receiver: 'cost: a bare RFC 8936 loop acknowledging every SET; refusal: tokenctl/resource-server polling, 10-minute cache',
  };
  return { figs, meta };
}

/** The figures as a small table, beside lib/report.js's. */
export function eventsTable(/** @type {Record<string, number|null>} */ figs) {
  const rows = [['events figure', 'key', 'value', 'target', ''], ...EVENT_FIGURES.map((f) => {
    const v = figs[f.key] ?? null;
    const show = v === null ? 'n/a' : Math.abs(v) >= 100 ? Math.round(v).toLocaleString('en-US') : v.toFixed(Math.abs(v) >= 10 ? 1 : 3);
    return [f.label, f.key, show, f.target ?? '', f.ok === undefined ? '' : v === null ? '–' : f.ok(v) ? '✓' : '✗'];
  })];
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => [...(r[i] ?? '')].length)));
  return rows.map((r) => '│ ' + r.map((c, i) => c + ' '.repeat((widths[i] ?? 0) - [...c].length)).join(' │ ') + ' │').join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { values } = parseArgs({ options: { quick: { type: 'boolean', default: false }, reps: { type: 'string' } } });
  const quick = Boolean(values.quick);
  const workDir = mkdtempSync(join(tmpdir(), 'tokenctl-bench-events-'));
  try {
    const missing = await tokenctlServeMissing();
    if (missing) throw new Error(missing);
    const stores = await prepareStores({ quick, rebuild: false, log: console.log });
    const { figs, meta } = await runEventsBench({
      pool: stores.pool, workDir, reps: Number(values.reps ?? (quick ? 2 : 3)), durationS: quick ? 2 : 5, warmupS: quick ? 1 : 2, connections: 50,
      log: console.log, note: (s) => console.log(`  ! ${s}`),
    });
    console.log(eventsTable(figs));
    console.log(JSON.stringify(meta));
  } finally {
    killAll();
    rmSync(workDir, { recursive: true, force: true });
  }
}
