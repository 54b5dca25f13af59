#!/usr/bin/env node
/**
 * What the resident memory of `tokenctl serve` is made of under the bench's loads: the runs of
 * the bench's revocation group (revocation, then refresh and the code exchange on the same file,
 * or any of them alone) against one server each, started as bench/lib/contenders.js starts it
 * (pinned, NODE_ENV=production) with bench/lib/memory-probe.cjs preloaded. Prints each run's
 * throughput and peak RSS (sampled from /proc during the measured part, as the bench does) and
 * the probe's breakdown at its peak: V8's heap, Node's external memory, glibc's main heap and
 * thread arenas, the executable's pages, shared memory.
 *
 * Usage: node bench/memory.js --db POOL.db [--kinds revoke,refresh,authorization_code]
 *          [--warmup 2] [--seconds 5] [--node-args '--max-semi-space-size=8'] [--env 'K=V …']
 *          [--root DIR] [--no-probe] [--print-output]
 * POOL.db: a bench pool store ($TMPDIR/tokenctl-bench-cache/<key>/pool-….db; its -access.txt,
 * -refresh.txt and -codes.txt beside it), copied once, never written. `--root`: another built
 * tokenctl. `--no-probe`: the server as the bench runs it, nothing preloaded (the probe reads
 * /proc/self/smaps at each new peak). `--print-output`: what the server printed to stdout, after
 * each run (with `--node-args=--trace-gc`, V8's collections). Only 127.0.0.1 is ever targeted.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { REQUESTS } from './lib/contenders.js';
import { runLoad } from './lib/measure.js';
import { killAll, killGroup, startServer } from './lib/proc.js';
import { copyStore } from './lib/stores.js';

const HERE = fileURLToPath(new URL('.', import.meta.url));
const { values } = parseArgs({
  options: {
    db: { type: 'string' },
    kinds: { type: 'string', default: 'revoke,refresh,authorization_code' },
    warmup: { type: 'string', default: '2' },
    seconds: { type: 'string', default: '5' },
    'node-args': { type: 'string', default: '' },
    env: { type: 'string', default: '' },
    root: { type: 'string', default: join(HERE, '..') },
    'no-probe': { type: 'boolean', default: false },
    'print-output': { type: 'boolean', default: false },
  },
});
if (!values.db) {
  console.error('usage: node bench/memory.js --db POOL.db [--kinds revoke,refresh,authorization_code] [--node-args …] [--env …]');
  process.exit(2);
}
const base = String(values.db).replace(/\.db$/, '');
/** What each run sends, and from which file: the bench's requests (bench/lib/contenders.js). */
const KINDS = {
  revoke: { req: REQUESTS.tokenctl.revoke, file: `${base}-access.txt`, fresh: true },
  refresh: { req: REQUESTS.tokenctl.refresh, file: `${base}-refresh.txt`, fresh: false },
  refresh_dpop: { req: REQUESTS.tokenctl.refreshDpop, file: `${base}-refresh.txt`, fresh: false },
  authorization_code: { req: REQUESTS.tokenctl.authorizationCode, file: `${base}-codes.txt`, fresh: true },
};
const kinds = String(values.kinds).split(',').filter(Boolean);
for (const k of kinds) if (!(k in KINDS)) throw new Error(`--kinds: unknown ${k}; known: ${Object.keys(KINDS).join(', ')}`);
const env = Object.fromEntries(String(values.env).split(' ').filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
const nodeArgs = String(values['node-args']).split(' ').filter(Boolean);
const workDir = mkdtempSync(join(tmpdir(), 'tokenctl-memory-'));
const db = copyStore(String(values.db), join(workDir, 'pool.db'));

try {
  for (const kind of kinds) {
    const k = KINDS[/** @type {keyof typeof KINDS} */ (kind)];
    const probeFile = join(workDir, `probe-${kind}.jsonl`);
    const probe = values['no-probe'] ? [] : ['--require', join(HERE, 'lib/memory-probe.cjs')];
    const args = [...nodeArgs, ...probe, join(resolve(String(values.root)), 'bin/run.js'), 'serve', '--host', '127.0.0.1', '--port', '0', '--db', db, '--log-level', 'warn'];
    const server = await startServer('tokenctl serve', process.execPath, args, {
      log: join(workDir, `${kind}.log`),
      env: { ...process.env, NODE_ENV: 'production', TOKENCTL_MEMORY_PROBE: probeFile, ...env },
    });
    // What the server prints after "listening on" (V8's --trace-gc lines, when asked for), kept beside the figures.
    const printed = /** @type {string[]} */ ([]);
    server.child.stdout?.on('data', (/** @type {Buffer} */ chunk) => printed.push(chunk.toString('utf8')));
    try {
      const r = await runLoad({ label: kind, server, ...k.req, tokenFile: k.file, fresh: k.fresh, connections: 50, warmupS: Number(values.warmup), durationS: Number(values.seconds), workDir });
      const failed = r.non2xx + r.errors + r.timeouts;
      console.log(JSON.stringify({ kind, rps: Math.round(r.rps), p99_ms: r.latency.p99, server_cpu: +r.serverCpuShare.toFixed(2), peak_rss_mb: Math.round(r.serverRssMb), failed }));
      if (!values['no-probe']) {
        const peaks = readFileSync(probeFile, 'utf8').trim().split('\n').map((line) => JSON.parse(line));
        // How it rose (ms since the server started, MB), then what the highest was made of.
        const t0 = peaks[0].at - Math.round(peaks[0].uptime_ms);
        console.log(JSON.stringify({ kind, rise: peaks.map((p) => [p.at - t0, Math.round(p.rss_mb), Math.round(p.v8_resident_mb), Math.round(p.heap_used_mb)]) }));
        console.log(JSON.stringify({ kind, probe_peak: peaks.at(-1) }));
      }
      if (values['print-output']) process.stdout.write(printed.join(''));
    } finally {
      killGroup(server.child);
    }
  }
} finally {
  killAll();
  rmSync(workDir, { recursive: true, force: true });
}
