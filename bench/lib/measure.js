/**
 * One measured load run against one running server: the load generator (lib/load-worker.js)
 * pinned to the load core, the server's CPU time and peak resident memory read from /proc
 * during exactly the measured part; the login client beside such a run; and small HTTP checks
 * around the runs (only 127.0.0.1).
 */
import { createInterface } from 'node:readline';
import { performance } from 'node:perf_hooks';
import { readFileSync, writeFileSync } from 'node:fs';
import { clearInterval, setInterval } from 'node:timers';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuSeconds, killGroup, LOAD_CORE, rssMb, startChild } from './proc.js';

const WORKER = fileURLToPath(new URL('./load-worker.js', import.meta.url));

/**
 * @typedef {{ rps: number, ok: number, non2xx: number, errors: number, timeouts: number,
 *   seconds: number, latency: { p50: number, p90: number, p99: number, max: number },
 *   loadCpuShare: number, tokensUsed: number, firstToken: number, exhausted: boolean,
 *   serverCpuShare: number, serverRssMb: number, dbCpuShare?: number, dbAuxCpuShare?: number }} LoadResult
 *   `dbCpuShare`: the CPU of the database's backends serving the server under test (its
 *   connections), `dbAuxCpuShare`: of the database's background processes (WAL writer,
 *   checkpointer, autovacuum: shared with anyone else using that database server), each over
 *   the measured wall time; only when a `database` watcher is given.
 */

/**
 * What a run measures of a database beside the server: the pids of the backends serving the
 * server under test and of the database's background processes, asked at the start and the end
 * of the measured part (lib/postgres.js backendWatcher).
 * @typedef {{ pids: () => Promise<{ own: number[], aux: number[] }> }} DatabaseWatcher
 */

/**
 * CPU seconds of a set of processes: at the start, what each has used; at the end, what each
 * used since (a process that started meanwhile counts whole, one that ended is lost).
 * @param {DatabaseWatcher} w
 */
async function databaseCpu(w) {
  const read = (/** @type {number[]} */ pids) => new Map(pids.map((pid) => [pid, cpuSeconds(pid)]));
  const start = await w.pids();
  const own0 = read(start.own);
  const aux0 = read(start.aux);
  return async () => {
    const end = await w.pids();
    const since = (/** @type {Map<number, number>} */ before, /** @type {number[]} */ pids) =>
      [...new Set([...before.keys(), ...pids])].reduce((sum, pid) => {
        const now = cpuSeconds(pid);
        return Number.isFinite(now) ? sum + now - (before.get(pid) ?? 0) : sum;
      }, 0);
    return { own: since(own0, end.own), aux: since(aux0, end.aux) };
  };
}

/**
 * @param {{ label: string, server: { pid: number, url: string }, path: string, prefix: string,
 *   suffix?: string, headers?: Record<string,string>, tokenFile: string, fresh?: boolean, dpop?: boolean,
 *   connections: number, warmupS: number, durationS: number, workDir: string, onMeasure?: () => void,
 *   database?: DatabaseWatcher }} o
 *   onMeasure: called at the start and at the end of the measured part; database: whose CPU to
 *   measure beside the server's.
 * @returns {Promise<LoadResult>}
 */
export async function runLoad(o) {
  const cfgFile = join(o.workDir, `load-${o.label}.json`);
  writeFileSync(cfgFile, JSON.stringify({
    url: o.server.url, path: o.path, connections: o.connections, warmupS: o.warmupS, durationS: o.durationS,
    headers: o.headers ?? {}, prefix: o.prefix, suffix: o.suffix ?? '', tokenFile: o.tokenFile, fresh: o.fresh ?? false, dpop: o.dpop ?? false,
  }));
  const child = startChild(process.execPath, [WORKER, cfgFile], { core: LOAD_CORE, log: join(o.workDir, `load-${o.label}.log`) });
  const timeout = setTimeout(() => killGroup(child), (o.warmupS + o.durationS) * 1000 + 120_000);
  let cpu0 = 0;
  let t0 = 0n;
  let peakRss = 0;
  /** @type {NodeJS.Timeout|undefined} */
  let sampler;
  /** @type {Partial<LoadResult>|undefined} */
  let result;
  let share = NaN;
  /** @type {{ own: number, aux: number }|undefined} */
  let db;
  const sample = () => (peakRss = Math.max(peakRss, rssMb(o.server.pid) || 0));
  try {
    const lines = createInterface({ input: /** @type {NodeJS.ReadableStream} */ (child.stdout) });
    /** @type {(() => Promise<{ own: number, aux: number }>)|undefined} */
    let dbSince;
    for await (const line of lines) {
      if (line === 'measure-start') {
        o.onMeasure?.();
        cpu0 = cpuSeconds(o.server.pid);
        t0 = process.hrtime.bigint();
        sampler = setInterval(sample, 100);
        if (o.database) dbSince = await databaseCpu(o.database);
      } else if (line === 'measure-end') {
        const wall = Number(process.hrtime.bigint() - t0) / 1e9;
        share = (cpuSeconds(o.server.pid) - cpu0) / wall;
        if (dbSince) {
          const used = await dbSince();
          db = { own: used.own / wall, aux: used.aux / wall };
        }
        o.onMeasure?.();
        sample();
        clearInterval(sampler);
      } else if (line.startsWith('result ')) {
        result = JSON.parse(line.slice(7));
      }
    }
  } finally {
    clearTimeout(timeout);
    clearInterval(sampler);
    killGroup(child);
  }
  if (!result) throw new Error(`load run ${o.label} gave no result (see ${join(o.workDir, `load-${o.label}.log`)})`);
  return /** @type {LoadResult} */ ({ ...result, serverCpuShare: share, serverRssMb: peakRss, ...(db && { dbCpuShare: db.own, dbAuxCpuShare: db.aux }) });
}

/**
 * One measured load run across several servers (nodes of one store): the connections are split
 * evenly, one load generator per server (all pinned to the load core), started together with
 * the same warm-up and duration. Throughput, counts, tokens used and generator CPU are summed;
 * latency percentiles are the worst of the generators'; server CPU share is the servers' summed
 * CPU time from the first generator's measured start to the last one's end over that wall time
 * (so up to the number of servers); RSS is the highest of the servers' peaks. A fresh run gives
 * each generator its own slice of the token file, so that no token is presented twice.
 * @param {Omit<Parameters<typeof runLoad>[0], 'server'> & { servers: { pid: number, url: string }[] }} o
 * @returns {Promise<LoadResult>}
 */
export async function runLoadAcross(o) {
  const n = o.servers.length;
  const children = o.servers.map((server, i) => {
    const cfgFile = join(o.workDir, `load-${o.label}-${i}.json`);
    const connections = Math.floor(o.connections / n) + (i < o.connections % n ? 1 : 0);
    writeFileSync(cfgFile, JSON.stringify({
      url: server.url, path: o.path, connections, warmupS: o.warmupS, durationS: o.durationS,
      headers: o.headers ?? {}, prefix: o.prefix, suffix: o.suffix ?? '', tokenFile: o.tokenFile, fresh: o.fresh ?? false, dpop: o.dpop ?? false,
      ...(o.fresh && { start: Math.floor((i * tokenCount(o.tokenFile)) / n) }),
    }));
    return startChild(process.execPath, [WORKER, cfgFile], { core: LOAD_CORE, log: join(o.workDir, `load-${o.label}-${i}.log`) });
  });
  const timeout = setTimeout(() => children.forEach((c) => killGroup(c)), (o.warmupS + o.durationS) * 1000 + 120_000);
  const cpuAll = () => o.servers.reduce((sum, s) => sum + cpuSeconds(s.pid), 0);
  let started = 0;
  let ended = 0;
  let cpu0 = 0;
  let t0 = 0n;
  let share = NaN;
  let peakRss = 0;
  /** @type {NodeJS.Timeout|undefined} */
  let sampler;
  /** @type {Promise<() => Promise<{ own: number, aux: number }>>|undefined} */
  let dbSince;
  /** @type {{ own: number, aux: number }|undefined} */
  let db;
  const sample = () => (peakRss = Math.max(peakRss, ...o.servers.map((s) => rssMb(s.pid) || 0)));
  /** @type {(Partial<LoadResult>|undefined)[]} */
  const results = [];
  try {
    await Promise.all(children.map(async (child, i) => {
      const lines = createInterface({ input: /** @type {NodeJS.ReadableStream} */ (child.stdout) });
      for await (const line of lines) {
        if (line === 'measure-start' && ++started === 1) {
          cpu0 = cpuAll();
          t0 = process.hrtime.bigint();
          sampler = setInterval(sample, 100);
          if (o.database) dbSince = databaseCpu(o.database);
        } else if (line === 'measure-end' && ++ended === n) {
          const wall = Number(process.hrtime.bigint() - t0) / 1e9;
          share = (cpuAll() - cpu0) / wall;
          if (dbSince) {
            const used = await (await dbSince)();
            db = { own: used.own / wall, aux: used.aux / wall };
          }
          sample();
          clearInterval(sampler);
        } else if (line.startsWith('result ')) {
          results[i] = JSON.parse(line.slice(7));
        }
      }
    }));
  } finally {
    clearTimeout(timeout);
    clearInterval(sampler);
    children.forEach((c) => killGroup(c));
  }
  if (results.length !== n || results.some((r) => !r)) throw new Error(`load run ${o.label} gave no result from every generator (see ${join(o.workDir, `load-${o.label}-*.log`)})`);
  const rs = /** @type {LoadResult[]} */ (results);
  const sum = (/** @type {(r: LoadResult) => number} */ f) => rs.reduce((a, r) => a + f(r), 0);
  const worst = (/** @type {'p50'|'p90'|'p99'|'max'} */ k) => Math.max(...rs.map((r) => r.latency[k]));
  return {
    rps: sum((r) => r.rps), ok: sum((r) => r.ok), non2xx: sum((r) => r.non2xx), errors: sum((r) => r.errors), timeouts: sum((r) => r.timeouts),
    seconds: Math.max(...rs.map((r) => r.seconds)),
    latency: { p50: worst('p50'), p90: worst('p90'), p99: worst('p99'), max: worst('max') },
    loadCpuShare: sum((r) => r.loadCpuShare), tokensUsed: sum((r) => r.tokensUsed), firstToken: 0, exhausted: rs.some((r) => r.exhausted),
    serverCpuShare: share, serverRssMb: peakRss, ...(db && { dbCpuShare: db.own, dbAuxCpuShare: db.aux }),
  };
}

/** Lines in a token file. @param {string} file */
function tokenCount(file) {
  return readFileSync(file, 'utf8').split('\n').filter(Boolean).length;
}

/**
 * POSTs a form to a local server and returns status and parsed JSON (or text).
 * @param {string} url @param {string} body @param {Record<string,string>} [headers]
 */
export async function postForm(url, body, headers = {}) {
  if (new URL(url).hostname !== '127.0.0.1') throw new Error(`refusing to contact ${url}`);
  const res = await globalThis.fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers } });
  const text = await res.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, json, text };
}

/**
 * Whether introspection says `active` for a token, as the expected client.
 * @param {string} url @param {string} token @param {{ id: string, secret: string }} client
 */
export async function isActive(url, token, client) {
  const r = await postForm(url, `token=${encodeURIComponent(token)}&token_type_hint=access_token&client_id=${encodeURIComponent(client.id)}&client_secret=${encodeURIComponent(client.secret)}`);
  if (r.status !== 200 || !r.json || typeof r.json.active !== 'boolean') throw new Error(`introspection at ${url} answered ${r.status}: ${r.text.slice(0, 200)}`);
  return r.json.active;
}

const LOGIN_WORKER = fileURLToPath(new URL('./login-worker.js', import.meta.url));

/**
 * @typedef {{ samples: number, failures: number, first_failures: string[], p50_ms: number|null,
 *   p90_ms: number|null, p99_ms: number|null, max_ms: number|null, step_p50_ms: Record<string, number|null>,
 *   step_p99_ms: Record<string, number|null>, finishedAt: number }} LoginResult
 */

/**
 * Starts the login client (lib/login-worker.js) pinned to the load core, and resolves with its
 * timings once it has done `seconds` of round trips; `finishedAt` is `performance.now()` of this
 * process when its result came, to tell whether it ran inside a background load.
 * @param {{ label: string, url: string, client: { id: string, secret: string, redirectUri: string },
 *   seconds: number, warmup: number, workDir: string }} o
 * @returns {Promise<LoginResult>}
 */
export async function runLoginLoop(o) {
  const cfgFile = join(o.workDir, `login-${o.label}.json`);
  writeFileSync(cfgFile, JSON.stringify({ url: o.url, client: o.client, seconds: o.seconds, warmup: o.warmup }));
  const log = join(o.workDir, `login-${o.label}.log`);
  const child = startChild(process.execPath, [LOGIN_WORKER, cfgFile], { core: LOAD_CORE, log });
  const timeout = setTimeout(() => killGroup(child), o.seconds * 1000 + 120_000);
  try {
    const lines = createInterface({ input: /** @type {NodeJS.ReadableStream} */ (child.stdout) });
    for await (const line of lines) {
      if (line.startsWith('result ')) return { ...JSON.parse(line.slice(7)), finishedAt: performance.now() };
    }
  } finally {
    clearTimeout(timeout);
    killGroup(child);
  }
  throw new Error(`the login loop ${o.label} gave no result (see ${log})`);
}
