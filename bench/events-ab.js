#!/usr/bin/env node
/**
 * Where events_cost_ratio goes (issue 18): revocation throughput in three modes, alternated
 * round by round on fresh copies of the pool store, pinned like bench/events.js:
 *   off     no receiver;
 *   outbox  a poll receiver registered, nobody polling (the outbox writes alone);
 *   poll    a poll receiver registered and polling (bench/events.js's "with");
 *   spin    no receiver, but a process beside the load generator spinning 1.8 ms every 45 ms
 *           (bench/lib/spinner.js, ~5 % of that core): what work on that core, such as the
 *           receiver's, costs the server on its own (bench/PERF-LOG.md 44).
 * Usage: node bench/events-ab.js [--rounds 3] [--seconds 5] [--warmup 2] [--modes off,outbox,poll]
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

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '3' }, seconds: { type: 'string', default: '5' }, warmup: { type: 'string', default: '2' }, modes: { type: 'string', default: 'off,outbox,poll' } } });
const modes = String(values.modes).split(',');
const unknown = modes.filter((m) => !['off', 'outbox', 'poll', 'spin'].includes(m));
if (unknown.length > 0) {
  console.error(`unknown mode ${unknown.join(', ')}: the modes are off, outbox, poll and spin`);
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
      const db = copyStore(stores.pool.db, join(workDir, `${mode}-${round}.db`));
      if (mode === 'outbox' || mode === 'poll') await addReceiver(db);
      const server = await startTokenctl(workDir, `${mode}-${round}`, db);
      const stop = mode === 'poll' ? barePoller(server.url) : null;
      const spinner = mode === 'spin' ? startChild(process.execPath, [SPINNER], { core: LOAD_CORE }) : null;
      try {
        const r = await runLoad({ label: `${mode}-${round}`, server, ...REQUESTS.tokenctl.revoke, tokenFile: stores.pool.accessFile, fresh: true, connections: 50, warmupS: Number(values.warmup), durationS: Number(values.seconds), workDir });
        rps[mode]?.push(r.rps);
        const receiver = stop ? `, receiver ${(await stop()).cpuShare.toFixed(2)}` : '';
        console.log(`${mode.padEnd(7)} ${Math.round(r.rps).toString().padStart(6)} req/s  ${(1e6 * r.serverCpuShare / r.rps).toFixed(1)} µs server CPU per revocation (server at ${r.serverCpuShare.toFixed(2)} of its core, load generator ${r.loadCpuShare.toFixed(2)}${receiver})`);
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

