#!/usr/bin/env node
/**
 * Security events on PostgreSQL with three nodes (docs/events.md "Push"): how soon a push receiver
 * and a poll receiver hear of a revocation under a steady load, and how soon a push receiver that
 * was down has caught up.
 *
 * - `pg_push_event_p99_ms`: three `serve` nodes on one fresh schema, revocations over HTTP at a
 *   steady rate (default 500/s, spread over the nodes) for a bounded time; a push receiver (plain
 *   HTTP on 127.0.0.1, in this process, answering 202) notes when each revocation first arrives;
 *   p99 of arrival − the revocation's 200. `pg_poll_event_p99_ms` the same for a poll receiver
 *   (an RFC 8936 long-poll loop on one node, acknowledging everything), for comparison.
 * - `push_backlog_30k_ms`: the push receiver down (its port closed) and the poller paused while
 *   30,000 revocations are made as fast as the nodes take them; then both come back: the time
 *   from the push receiver's return to the last of the 30,000 arriving (`poll_backlog_30k_ms`
 *   for the poller).
 * Every revocation is checked for: none missing, and how many arrived twice (meta).
 *
 * `node bench/pg-push.js [--quick] [--reps N] [--rate R] [--seconds S] [--backlog N]` runs it
 * alone (build first); `node bench/run.js --only pg-push` runs it through the harness, and a full
 * `bench/run.js` runs it after the events figures. Needs TOKENCTL_BENCH_PG's PostgreSQL.
 */
import { Agent, createServer, request } from 'node:http';
import { join } from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { killAll, killGroup, runToEnd } from './lib/proc.js';
import { startTokenctl, tokenctlServeMissing } from './lib/contenders.js';
import { dropAllPg, emptyPg } from './lib/postgres.js';
import { median, round } from './lib/report.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const TOKENS_REVOKED = 'urn:tokenctl:secevent:tokens-revoked';
const NODES = 3;
/** Grants per `token issue --count` (its maximum). */
const ISSUE_BATCH = 10_000;

/** The figures this file adds, in the shape of lib/report.js's FIGURES. */
export const PG_PUSH_FIGURES = [
  { key: 'pg_push_event_p99_ms', label: 'PostgreSQL, 3 nodes: revocation acknowledged → push receiver, p99 ms', target: '≤ 1000', ok: (/** @type {number} */ v) => v <= 1000 },
  { key: 'push_backlog_30k_ms', label: 'push receiver back after 30,000 revocations → all arrived, ms', target: '≤ 10000', ok: (/** @type {number} */ v) => v <= 10_000 },
  { key: 'pg_poll_event_p99_ms', label: 'the same for a poll receiver, p99 ms (comparison)', target: null },
  { key: 'poll_backlog_30k_ms', label: 'poll receiver back after 30,000 revocations → all arrived, ms (comparison)', target: null },
];

/** `tokenctl ARGS --db URL --json`, its JSON. @param {string[]} args @param {string} db */
async function cli(args, db) {
  const r = await runToEnd(process.execPath, [join(ROOT, 'bin/run.js'), ...args, '--db', db, '--json'], { timeoutMs: 300_000 });
  if (r.code !== 0) throw new Error(`tokenctl ${args.slice(0, 2).join(' ')} failed (exit ${r.code}): ${(r.stderr || r.stdout).trim().split('\n').slice(-2).join(' | ')}`);
  return JSON.parse(r.stdout);
}

/** Arrival times (performance.now()) of revocations, by token jti, the first time each came; and repeats. */
class Arrivals {
  /** @type {Map<string, number>} */
  first = new Map();
  repeats = 0;
  sets = 0;
  /** When the first SET after `since()` came (the wait for a retry, for a push receiver back). */
  firstSetSince = Infinity;
  since() {
    this.firstSetSince = Infinity;
  }
  note(/** @type {string} */ set) {
    const at = performance.now();
    this.sets++;
    if (this.firstSetSince === Infinity) this.firstSetSince = at;
    const claims = JSON.parse(Buffer.from(set.slice(set.indexOf('.') + 1, set.lastIndexOf('.')), 'base64url').toString('utf8'));
    for (const r of claims.events?.[TOKENS_REVOKED]?.revocations ?? []) {
      if (typeof r.jti !== 'string') continue;
      if (this.first.has(r.jti)) this.repeats++;
      else this.first.set(r.jti, at);
    }
  }
}

/** The push receiver: plain HTTP on 127.0.0.1, 202 to every SET; down() closes its port, up() opens it again. */
async function pushReceiver() {
  const arrivals = new Arrivals();
  let port = 0;
  /** @type {import('node:http').Server|undefined} */
  let server;
  const up = async () => {
    const s = createServer((req, res) => {
      /** @type {Buffer[]} */
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        arrivals.note(Buffer.concat(chunks).toString('latin1'));
        res.writeHead(202).end();
      });
    });
    await new Promise((resolve, reject) => s.once('error', reject).listen(port, '127.0.0.1', () => resolve(undefined)));
    port = /** @type {import('node:net').AddressInfo} */ (s.address()).port;
    server = s;
  };
  const down = async () => {
    const s = server;
    server = undefined;
    if (!s) return;
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  };
  await up();
  return { arrivals, url: `http://127.0.0.1:${port}/events`, up, down };
}

/** An RFC 8936 long-poll loop on `url` acknowledging every SET; pause() and resume() it. */
function pollReceiver(/** @type {string} */ url, /** @type {string} */ authorization) {
  const arrivals = new Arrivals();
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  let paused = false;
  let stopped = false;
  /** @type {(() => void)|undefined} */
  let wake;
  /** @type {import('node:http').ClientRequest|undefined} */
  let current;
  const poll = (/** @type {string[]} */ ack, maxEvents = 1000) =>
    new Promise((resolve, reject) => {
      current = request(url + '/events/poll', { method: 'POST', agent, headers: { authorization, 'content-type': 'application/json' } }, (res) => {
        /** @type {Buffer[]} */
        const chunks = [];
        res.on('data', (d) => chunks.push(d));
        res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(Buffer.concat(chunks).toString('latin1'))) : reject(new Error(`poll: HTTP ${res.statusCode}`))));
      });
      current.on('error', reject);
      current.end(JSON.stringify({ ack, maxEvents, returnImmediately: maxEvents === 0 }));
    });
  const done = (async () => {
    /** @type {string[]} */
    let ack = [];
    while (!stopped) {
      if (paused) {
        // Paused: what it has is acknowledged (maxEvents 0 asks for nothing more), then it waits.
        if (ack.length > 0) await poll(ack, 0).catch(() => undefined);
        ack = [];
        if (paused) await new Promise((resolve) => (wake = () => resolve(undefined)));
        continue;
      }
      // A long poll cut short by pause() or stop() is no answer: its SETs come again.
      const answer = /** @type {{ sets: Record<string, string> }} */ (await poll(ack).catch((err) => (stopped || paused ? { sets: {} } : Promise.reject(err))));
      ack = Object.keys(answer.sets);
      for (const set of Object.values(answer.sets)) arrivals.note(set);
    }
  })();
  done.catch(() => undefined);
  return {
    arrivals,
    pause: () => {
      paused = true;
      current?.destroy();
    },
    resume: () => {
      paused = false;
      wake?.();
    },
    stop: async () => {
      stopped = true;
      wake?.();
      current?.destroy();
      await done.catch(() => undefined);
      agent.destroy();
    },
    done,
  };
}

/**
 * Revokes `tokens` over HTTP, spread over the nodes: at `rate` a second (open loop, at most 2,000
 * outstanding), or as fast as `concurrency` requests at a time go when rate is 0. Returns each
 * revocation's 200 time by jti.
 * @param {{ urls: string[], tokens: { access_token: string, jti: string }[], client: { id: string, secret: string }, rate: number, concurrency?: number }} o
 */
async function revokeAll(o) {
  const agents = o.urls.map(() => new Agent({ keepAlive: true, maxSockets: 16 }));
  const creds = `&token_type_hint=access_token&client_id=${encodeURIComponent(o.client.id)}&client_secret=${encodeURIComponent(o.client.secret)}`;
  /** @type {Map<string, number>} */
  const acked = new Map();
  let failures = 0;
  let next = 0;
  let outstanding = 0;
  const one = (/** @type {number} */ i) =>
    new Promise((resolve) => {
      const t = /** @type {{ access_token: string, jti: string }} */ (o.tokens[i]);
      const n = i % o.urls.length;
      outstanding++;
      const req = request(o.urls[n] + '/oauth/revocation', { method: 'POST', agent: agents[n], headers: { 'content-type': 'application/x-www-form-urlencoded' } }, (res) => {
        res.resume().on('end', () => {
          if (res.statusCode === 200) acked.set(t.jti, performance.now());
          else failures++;
          outstanding--;
          resolve(undefined);
        });
      });
      req.on('error', () => {
        failures++;
        outstanding--;
        resolve(undefined);
      });
      req.end(`token=${encodeURIComponent(t.access_token)}${creds}`);
    });
  /** @type {Promise<unknown>[]} */
  const all = [];
  const t0 = performance.now();
  let behind = 0;
  if (o.rate > 0) {
    while (next < o.tokens.length) {
      const due = Math.min(o.tokens.length, Math.floor(((performance.now() - t0) / 1000) * o.rate));
      if (due - next > 0 && outstanding > 2000) behind++;
      while (next < due && outstanding <= 2000) all.push(one(next++));
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  } else {
    const lane = async () => {
      while (next < o.tokens.length) await one(next++);
    };
    await Promise.all(Array.from({ length: o.concurrency ?? 48 }, lane));
  }
  await Promise.all(all);
  const seconds = (performance.now() - t0) / 1000;
  for (const a of agents) a.destroy();
  return { acked, failures, seconds, behind };
}

/** Percentile `p` (0–1) of `xs`, or null. @param {number[]} xs @param {number} p */
function pct(xs, p) {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return /** @type {number} */ (s[Math.min(s.length - 1, Math.max(0, Math.ceil(s.length * p) - 1))]);
}

/** Resolves once every jti of `jtis` arrived (true), or after `ms` (false). */
async function waitAll(/** @type {Arrivals} */ a, /** @type {string[]} */ jtis, /** @type {number} */ ms) {
  const until = performance.now() + ms;
  for (;;) {
    if (jtis.every((j) => a.first.has(j))) return true;
    if (performance.now() > until) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * One repetition: a fresh schema, a client, both receivers, the tokens, three nodes; the steady
 * phase, then the backlog.
 * @param {{ workDir: string, n: number, rate: number, seconds: number, backlog: number, log: (s: string) => void, note: (s: string) => void }} o
 */
async function repetition(o) {
  const pg = emptyPg();
  /** @type {Awaited<ReturnType<typeof startTokenctl>>[]} */
  const nodes = [];
  const push = await pushReceiver();
  /** @type {ReturnType<typeof pollReceiver>|undefined} */
  let poller;
  try {
    const c = await cli(['client', 'create', '--name', 'bench-push'], pg.url);
    const client = { id: c.client_id, secret: c.client_secret };
    await cli(['receiver', 'add', 'push-rs', '--push', push.url, '--allow-private-network', '--audience', 'push-rs'], pg.url);
    await cli(['receiver', 'add', 'poll-rs', '--poll', '--client', client.id, '--audience', 'poll-rs'], pg.url);
    const steadyCount = Math.round(o.rate * o.seconds);
    const t0 = performance.now();
    /** @type {{ access_token: string, jti: string }[]} */
    const tokens = [];
    for (let left = steadyCount + o.backlog; left > 0; left -= ISSUE_BATCH) {
      const issued = await cli(['token', 'issue', '--client', client.id, '--user', `u${tokens.length}`, '--count', String(Math.min(ISSUE_BATCH, left))], pg.url);
      for (const t of issued) tokens.push({ access_token: t.access_token, jti: t.jti });
    }
    o.log(`  pg-push ${o.n}: ${tokens.length.toLocaleString('en-US')} tokens issued in ${((performance.now() - t0) / 1000).toFixed(1)} s; starting ${NODES} nodes`);
    for (let i = 0; i < NODES; i++) nodes.push(await startTokenctl(o.workDir, `pgpush-${o.n}-${i}`, pg.url, [], { node: `push-${i}`, core: null }));
    const urls = nodes.map((x) => x.url);
    poller = pollReceiver(/** @type {string} */ (urls[0]), 'Basic ' + Buffer.from(`${client.id}:${client.secret}`).toString('base64'));
    await new Promise((resolve) => setTimeout(resolve, 500));

    // Steady: `rate` revocations a second for `seconds`.
    const steady = tokens.slice(0, steadyCount);
    const s = await revokeAll({ urls, tokens: steady, client, rate: o.rate });
    const jtis = steady.map((t) => t.jti).filter((j) => s.acked.has(j));
    const pushAll = await waitAll(push.arrivals, jtis, 30_000);
    const pollAll = await waitAll(poller.arrivals, jtis, 5_000);
    const lat = (/** @type {Arrivals} */ a) => jtis.filter((j) => a.first.has(j)).map((j) => /** @type {number} */ (a.first.get(j)) - /** @type {number} */ (s.acked.get(j)));
    const pushLat = lat(push.arrivals);
    const pollLat = lat(poller.arrivals);
    const steadyR = {
      revocations: jtis.length, failures: s.failures, rate: jtis.length / s.seconds, behind: s.behind,
      push_p50_ms: pct(pushLat, 0.5), push_p99_ms: pct(pushLat, 0.99), push_max_ms: pct(pushLat, 1), push_missing: jtis.length - pushLat.length, push_sets: push.arrivals.sets,
      poll_p50_ms: pct(pollLat, 0.5), poll_p99_ms: pct(pollLat, 0.99), poll_missing: jtis.length - pollLat.length, poll_sets: poller.arrivals.sets,
    };
    if (!pushAll || !pollAll) o.note(`pg-push ${o.n}: steady phase: ${steadyR.push_missing} revocations never reached the push receiver, ${steadyR.poll_missing} the poller`);
    if (s.failures > 0) o.note(`pg-push ${o.n}: ${s.failures} revocations failed`);
    o.log(`  pg-push ${o.n} steady ${Math.round(steadyR.rate)} rev/s × ${s.seconds.toFixed(1)} s: push p50 ${steadyR.push_p50_ms?.toFixed(0)} p99 ${steadyR.push_p99_ms?.toFixed(0)} max ${steadyR.push_max_ms?.toFixed(0)} ms in ${steadyR.push_sets} SETs; poll p50 ${steadyR.poll_p50_ms?.toFixed(0)} p99 ${steadyR.poll_p99_ms?.toFixed(0)} ms in ${steadyR.poll_sets} SETs`);

    // Backlog: the push receiver down, the poller paused, while `backlog` revocations are made.
    const pushSets0 = push.arrivals.sets;
    const pushRepeats0 = push.arrivals.repeats;
    await push.down();
    poller.pause();
    const b = await revokeAll({ urls, tokens: tokens.slice(steadyCount), client, rate: 0 });
    const back = tokens.slice(steadyCount).map((t) => t.jti).filter((j) => b.acked.has(j));
    const returned = performance.now();
    push.arrivals.since();
    await push.up();
    poller.resume();
    const [pushDone, pollDone] = await Promise.all([
      waitAll(push.arrivals, back, 120_000).then((ok) => (ok ? performance.now() - returned : null)),
      waitAll(poller.arrivals, back, 120_000).then((ok) => (ok ? performance.now() - returned : null)),
    ]);
    // Done when the last arrived: the wait above looks every 20 ms, the arrivals say exactly.
    const lastOf = (/** @type {Arrivals} */ a) => Math.max(...back.map((j) => a.first.get(j) ?? Infinity)) - returned;
    const backlogR = {
      revocations: back.length, seconds_to_make: b.seconds, failures: b.failures,
      push_ms: pushDone === null ? null : lastOf(push.arrivals), push_sets: push.arrivals.sets - pushSets0, push_repeats: push.arrivals.repeats - pushRepeats0,
      // Of push_ms: the wait for the next retry (the first SET after the return), then the drain.
      push_first_ms: push.arrivals.firstSetSince - returned,
      poll_ms: pollDone === null ? null : lastOf(poller.arrivals),
    };
    if (pushDone === null || pollDone === null) o.note(`pg-push ${o.n}: the backlog did not all arrive within 120 s (push ${pushDone === null ? 'no' : 'yes'}, poll ${pollDone === null ? 'no' : 'yes'})`);
    o.log(`  pg-push ${o.n} backlog ${back.length.toLocaleString('en-US')} (made in ${b.seconds.toFixed(1)} s): push caught up ${backlogR.push_ms?.toFixed(0)} ms after its return (first SET after ${backlogR.push_first_ms.toFixed(0)} ms) in ${backlogR.push_sets} SETs (${backlogR.push_repeats} repeats); poll ${backlogR.poll_ms?.toFixed(0)} ms`);
    return { steady: steadyR, backlog: backlogR, push_repeats: push.arrivals.repeats, poll_repeats: poller.arrivals.repeats };
  } finally {
    await poller?.stop();
    await push.down();
    for (const x of nodes) killGroup(x.child);
    await pg.drop().catch(() => undefined);
  }
}

/**
 * The figures over `reps` repetitions (medians), and what each repetition measured.
 * @param {{ workDir: string, reps: number, rate?: number, seconds?: number, backlog?: number, log: (s: string) => void, note: (s: string) => void }} o
 */
export async function runPgPushBench(o) {
  const rate = o.rate ?? 500;
  const seconds = o.seconds ?? 20;
  const backlog = o.backlog ?? 30_000;
  /** @type {Awaited<ReturnType<typeof repetition>>[]} */
  const reps = [];
  for (let n = 0; n < o.reps; n++) reps.push(await repetition({ workDir: o.workDir, n, rate, seconds, backlog, log: o.log, note: o.note }));
  const figs = {
    pg_push_event_p99_ms: median(reps.map((r) => r.steady.push_p99_ms)),
    push_backlog_30k_ms: median(reps.map((r) => r.backlog.push_ms)),
    pg_poll_event_p99_ms: median(reps.map((r) => r.steady.poll_p99_ms)),
    poll_backlog_30k_ms: median(reps.map((r) => r.backlog.poll_ms)),
  };
  const meta = {
    nodes: NODES, rate, seconds, backlog,
    per_repetition: reps.map((r) => ({
      steady: Object.fromEntries(Object.entries(r.steady).map(([k, v]) => [k, round(v, 1)])),
      backlog: Object.fromEntries(Object.entries(r.backlog).map(([k, v]) => [k, round(v, 1)])),
      push_repeats: r.push_repeats, poll_repeats: r.poll_repeats,
    })),
    receivers: 'push: node:http on 127.0.0.1 in the bench process, 202 to every SET; poll: an RFC 8936 long-poll loop on node 1, in the bench process',
  };
  return { figs, meta };
}

/** The figures as a small table. */
export function pgPushTable(/** @type {Record<string, number|null>} */ figs) {
  const rows = [['events on PostgreSQL figure', 'key', 'value', 'target', ''], ...PG_PUSH_FIGURES.map((f) => {
    const v = figs[f.key] ?? null;
    const show = v === null ? 'n/a' : Math.round(v).toLocaleString('en-US');
    return [f.label, f.key, show, f.target ?? '', f.ok === undefined ? '' : v === null ? '–' : f.ok(v) ? '✓' : '✗'];
  })];
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => [...(r[i] ?? '')].length)));
  return rows.map((r) => '│ ' + r.map((c, i) => c + ' '.repeat((widths[i] ?? 0) - [...c].length)).join(' │ ') + ' │').join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { values } = parseArgs({ options: { quick: { type: 'boolean', default: false }, reps: { type: 'string' }, rate: { type: 'string' }, seconds: { type: 'string' }, backlog: { type: 'string' } } });
  const quick = Boolean(values.quick);
  const workDir = mkdtempSync(join(tmpdir(), 'tokenctl-bench-pg-push-'));
  try {
    const missing = await tokenctlServeMissing();
    if (missing) throw new Error(missing);
    const { figs, meta } = await runPgPushBench({
      workDir, reps: Number(values.reps ?? (quick ? 1 : 2)), rate: Number(values.rate ?? 500), seconds: Number(values.seconds ?? (quick ? 10 : 20)),
      backlog: Number(values.backlog ?? 30_000), log: console.log, note: (s) => console.log(`  ! ${s}`),
    });
    console.log(pgPushTable(figs));
    console.log(JSON.stringify(meta));
  } finally {
    killAll();
    await dropAllPg().catch(() => undefined);
    rmSync(workDir, { recursive: true, force: true });
  }
}
