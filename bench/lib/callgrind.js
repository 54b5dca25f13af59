/**
 * `tokenctl serve` under valgrind's callgrind, for the benchmarks that count instructions instead
 * of timing (bench/refresh-instructions.js, bench/events-instructions.js): started with
 * instrumentation off, switched on and off around what is measured, one output file per thread.
 * Only 127.0.0.1 is ever listened on.
 */
import { execFileSync, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/**
 * Starts `serve` of the build under `root` on `db`, under callgrind writing `out`(-NN per thread).
 * Resolves with its URL, instrument(on) and stop() → the threads' files (the main thread's first).
 * @param {{ root: string, db: string, out: string, serveArgs?: string[] }} o
 */
export async function startServeUnderCallgrind(o) {
  const child = spawn(
    'valgrind',
    ['--tool=callgrind', '--smc-check=all-non-file', '--instr-atstart=no', '--separate-threads=yes', `--callgrind-out-file=${o.out}`, process.execPath, join(o.root, 'bin/run.js'), 'serve', '--host', '127.0.0.1', '--port', '0', '--db', o.db, '--log-level', 'warn', ...(o.serveArgs ?? [])],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_ENV: 'production' } },
  );
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  /** @type {string} */
  const url = await new Promise((ok, fail) => {
    let buf = '';
    child.stdout.on('data', (d) => {
      buf += d;
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(buf);
      if (m) ok(m[1]);
    });
    child.once('exit', (code) => fail(new Error(`serve exited (${code}) before listening: ${stderr.slice(-2000)}`)));
  });
  const instrument = (/** @type {boolean} */ on) => execFileSync('callgrind_control', ['-i', on ? 'on' : 'off', String(child.pid)], { stdio: 'ignore' });
  /** @returns {Promise<{ file: string, total: number }[]>} */
  const stop = () =>
    new Promise((ok) => {
      child.once('exit', () => ok(threadTotals(o.out)));
      child.kill('SIGTERM');
    });
  return { url, instrument, stop };
}

/** Each thread's file and instruction total (callgrind writes one file per thread, the main thread's first). */
function threadTotals(/** @type {string} */ out) {
  const dir = dirname(out);
  const files = readdirSync(dir).filter((f) => f.startsWith(`${basename(out)}-`)).sort();
  if (files.length === 0) throw new Error(`no callgrind output for ${out}`);
  return files.map((f) => {
    const m = /^totals: (\d+)/m.exec(readFileSync(join(dir, f), 'utf8'));
    if (!m) throw new Error(`no totals in ${f}`);
    return { file: join(dir, f), total: Number(m[1]) };
  });
}
