/**
 * One measured load run against one running server: the load generator (lib/load-worker.js)
 * pinned to the load core, the server's CPU time and peak resident memory read from /proc
 * during exactly the measured part; and small HTTP checks around the runs (only 127.0.0.1).
 */
import { createInterface } from 'node:readline';
import { writeFileSync } from 'node:fs';
import { clearInterval, setInterval } from 'node:timers';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuSeconds, killGroup, LOAD_CORE, rssMb, startChild } from './proc.js';

const WORKER = fileURLToPath(new URL('./load-worker.js', import.meta.url));

/**
 * @typedef {{ rps: number, ok: number, non2xx: number, errors: number, timeouts: number,
 *   seconds: number, latency: { p50: number, p90: number, p99: number, max: number },
 *   loadCpuShare: number, tokensUsed: number, firstToken: number, exhausted: boolean,
 *   serverCpuShare: number, serverRssMb: number }} LoadResult
 */

/**
 * @param {{ label: string, server: { pid: number, url: string }, path: string, prefix: string,
 *   suffix?: string, headers?: Record<string,string>, tokenFile: string, fresh?: boolean,
 *   connections: number, warmupS: number, durationS: number, workDir: string }} o
 * @returns {Promise<LoadResult>}
 */
export async function runLoad(o) {
  const cfgFile = join(o.workDir, `load-${o.label}.json`);
  writeFileSync(cfgFile, JSON.stringify({
    url: o.server.url, path: o.path, connections: o.connections, warmupS: o.warmupS, durationS: o.durationS,
    headers: o.headers ?? {}, prefix: o.prefix, suffix: o.suffix ?? '', tokenFile: o.tokenFile, fresh: o.fresh ?? false,
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
  const sample = () => (peakRss = Math.max(peakRss, rssMb(o.server.pid) || 0));
  try {
    const lines = createInterface({ input: /** @type {NodeJS.ReadableStream} */ (child.stdout) });
    for await (const line of lines) {
      if (line === 'measure-start') {
        cpu0 = cpuSeconds(o.server.pid);
        t0 = process.hrtime.bigint();
        sampler = setInterval(sample, 100);
      } else if (line === 'measure-end') {
        share = (cpuSeconds(o.server.pid) - cpu0) / (Number(process.hrtime.bigint() - t0) / 1e9);
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
  return /** @type {LoadResult} */ ({ ...result, serverCpuShare: share, serverRssMb: peakRss });
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
