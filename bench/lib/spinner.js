#!/usr/bin/env node
/**
 * `node bench/lib/spinner.js [PERIOD_MS] [BUSY_MS]`: a stand-in for a receiver's work and nothing
 * else: every PERIOD_MS (45) it spins for BUSY_MS (1.8), touching no memory, no file, no socket.
 * bench/events-ab.js's `spin` mode runs it beside the load generator, to see what work on that
 * core costs the server on the other one. Runs until killed.
 */
import { performance } from 'node:perf_hooks';
import { setInterval } from 'node:timers';

const period = Number(process.argv[2] ?? 45);
const busy = Number(process.argv[3] ?? 1.8);
if (!(period > 0) || !(busy >= 0) || busy >= period) {
  console.error('usage: node bench/lib/spinner.js [PERIOD_MS > 0] [BUSY_MS, less than PERIOD_MS]');
  process.exit(2);
}
setInterval(() => {
  const start = performance.now();
  while (performance.now() - start < busy);
}, period);
