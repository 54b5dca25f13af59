#!/usr/bin/env node
/**
 * Where events_cost_ratio goes (bench/events.js): revocation throughput in three modes, alternated
 * round by round on fresh copies of the pool store, pinned like bench/events.js:
 *   off     no receiver;
 *   outbox  a poll receiver registered, nobody polling (the outbox writes alone);
 *   poll    a poll receiver registered and polling (bench/events.js's "with");
 *   spin    no receiver, but a process beside the load generator spinning 1.8 ms every 45 ms
 *           (bench/lib/spinner.js, ~5 % of that core): what work on that core, such as the
 *           receiver's, costs the server on its own.
 * A mode may carry a tag, `MODE#TAG`, to run it twice under two names: `--modes off,off#again` is
 * an A/A comparison, what two runs of one configuration differ by on this machine.
 * --gc: `serve` runs with V8's --trace-gc-nvp, and each run's line adds its scavenges over the
 * measured seconds: their time and the bytes that survived them and were promoted, per revocation.
 * Usage: node bench/events-ab.js [--rounds 3] [--seconds 5] [--warmup 2] [--modes off,outbox,poll] [--gc]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { killAll, killGroup, LOAD_CORE, startChild } from './lib/proc.js';
import { runLoad } from './lib/measure.js';
import { REQUESTS, startTokenctl, tokenctlServeMissing } from './lib/contenders.js';
import { copyStore, prepareStores } from './lib/stores.js';
import { median } from './lib/report.js';
import { addReceiver, barePoller } from './events.js';

/** The fields read from a --trace-gc-nvp line (gcTrace, below; defined before the run starts). */
const PAUSE = / pause=([\d.]+)/;
const SURVIVED = / new_space_survived=(\d+)/;
const PROMOTED = / promoted=(\d+)/;

const USAGE = 'usage: node bench/events-ab.js [--rounds 3] [--seconds 5] [--warmup 2] [--modes off,outbox,poll] [--gc]';
const options = /** @type {const} */ ({ rounds: { type: 'string', default: '3' }, seconds: { type: 'string', default: '5' }, warmup: { type: 'string', default: '2' }, modes: { type: 'string', default: 'off,outbox,poll' }, gc: { type: 'boolean', default: false } });
/** @type {ReturnType<typeof parseArgs<{ options: typeof options }>>['values']} */
let values;
try {
  values = parseArgs({ options }).values;
} catch (err) {
  console.error(`${/** @type {Error} */ (err).message}\n${USAGE}`);
  process.exit(2);
}
const modes = String(values.modes).split(',');
const twice = modes.filter((m, i) => modes.indexOf(m) !== i);
if (twice.length > 0) {
  console.error(`mode ${twice.join(', ')} given twice: to run one mode twice, tag the second (off,off#again)`);
  process.exit(2);
}
/** A mode's kind, without its tag. @param {string} mode */
const kindOf = (mode) => mode.split('#')[0] ?? mode;
const unknown = modes.filter((m) => !['off', 'outbox', 'poll', 'spin'].includes(kindOf(m)));
if (unknown.length > 0) {
  console.error(`unknown mode ${unknown.join(', ')}: the modes are off, outbox, poll and spin (each may carry a tag: off#again)`);
  process.exit(2);
}
const SPINNER = fileURLToPath(new URL('./lib/spinner.js', import.meta.url));
const workDir = mkdtempSync(join(tmpdir(), 'tokenctl-events-ab-'));
try {
  const missing = await tokenctlServeMissing();
  if (missing) throw new Error(missing);
  const stores = await prepareStores({ quick: false, rebuild: false, log: () => undefined });
  /** @type {Record<string, number[]>} */
  const rps = Object.fromEntries(modes.map((m) => [m, []]));

  for (let round = 0; round < Number(values.rounds); round++) {
    const order = round % 2 ? [...modes].reverse() : modes;
    for (const mode of order) {
      const kind = kindOf(mode);
      const name = `${kind}-${modes.indexOf(mode)}-${round}`;
      const db = copyStore(stores.pool.db, join(workDir, `${name}.db`));
      if (kind === 'outbox' || kind === 'poll') await addReceiver(db);
      const server = await startTokenctl(workDir, name, db, values.gc ? ['--trace-gc-nvp'] : []);
      const gc = values.gc ? gcTrace(server.child) : null;
      const stop = kind === 'poll' ? barePoller(server.url) : null;
      const spinner = kind === 'spin' ? startChild(process.execPath, [SPINNER], { core: LOAD_CORE }) : null;
      try {
        const r = await runLoad({ label: name, server, ...REQUESTS.tokenctl.revoke, tokenFile: stores.pool.accessFile, fresh: true, connections: 50, warmupS: Number(values.warmup), durationS: Number(values.seconds), workDir, onMeasure: gc?.mark });
        rps[mode]?.push(r.rps);
        const receiver = stop ? `, receiver ${(await stop()).cpuShare.toFixed(2)}` : '';
        const scavenges = gc ? `; ${gc.summary(r.rps * r.seconds)}` : '';
        console.log(`${mode.padEnd(7)} ${Math.round(r.rps).toString().padStart(6)} req/s  ${(1e6 * r.serverCpuShare / r.rps).toFixed(1)} µs server CPU per revocation (server at ${r.serverCpuShare.toFixed(2)} of its core, load generator ${r.loadCpuShare.toFixed(2)}${receiver})${scavenges}`);
      } finally {
        if (stop) await stop();
        if (spinner) killGroup(spinner);
        killGroup(server.child);
        for (const s of ['', '-wal', '-shm']) rmSync(db + s, { force: true });
      }
    }
  }
  const base = median(rps[modes[0] ?? 'off'] ?? []);
  for (const m of modes) console.log(`${m}: median ${Math.round(median(rps[m] ?? []) ?? 0)} req/s, ÷ ${modes[0]} ${((median(rps[m] ?? []) ?? 0) / (base ?? 1)).toFixed(3)}`);
} finally {
  killAll();
  rmSync(workDir, { recursive: true, force: true });
}

/**
 * The scavenges of a `serve` started with --trace-gc-nvp (one line each on its stdout), counted
 * between the two calls of mark() (the load's measure-start and measure-end). V8 writes them
 * through a buffered stdout, so the window is the measured part's give or take a few scavenges.
 * @param {import('node:child_process').ChildProcess} child
 */
function gcTrace(child) {
  let counting = false;
  let pending = '';
  const sum = { n: 0, pauseMs: 0, survived: 0, promoted: 0 };
  child.stdout?.setEncoding('utf8').on('data', (/** @type {string} */ chunk) => {
    const lines = (pending + chunk).split('\n');
    pending = lines.pop() ?? '';
    if (!counting) return;
    for (const line of lines) {
      if (!/ gc=s /.test(line)) continue;
      const field = (/** @type {RegExp} */ re) => Number(re.exec(line)?.[1] ?? 0);
      sum.n++;
      sum.pauseMs += field(PAUSE);
      sum.survived += field(SURVIVED);
      sum.promoted += field(PROMOTED);
    }
  });
  return {
    mark: () => {
      counting = !counting;
    },
    /** @param {number} revocations */
    summary: (revocations) =>
      `${sum.n} scavenges, ${((1000 * sum.pauseMs) / revocations).toFixed(2)} µs, ${Math.round(sum.survived / revocations)} B survived and ${Math.round(sum.promoted / revocations)} B promoted per revocation`,
  };
}
