'use strict';
// Preloaded (`node --require`) by the start-up bench (bench/lib/cli.js): at exit, writes the
// process's CPU time (user + system, µs) to the file BENCH_CPU_FILE names. CPU time, unlike wall
// time, hardly moves when other processes share the cores.
process.once('exit', () => {
  const { user, system } = process.cpuUsage();
  require('node:fs').writeFileSync(process.env.BENCH_CPU_FILE, String(user + system));
});
