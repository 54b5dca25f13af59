/**
 * Child processes of the benchmark: servers pinned to one core, load generators to another,
 * every one in its own process group and killed (group-wide) when the benchmark ends, even on
 * an error or Ctrl-C. Also the /proc readings: CPU time and resident memory of a process.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, openSync, closeSync } from 'node:fs';

const TASKSET = ['/usr/bin/taskset', '/bin/taskset'].find((p) => existsSync(p)) ?? null;
const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

/** Cores: servers on SERVER_CORE, load generators on LOAD_CORE (when taskset exists and there are ≥ 2). */
export const SERVER_CORE = '0';
export const LOAD_CORE = '1';

/** @type {Set<import('node:child_process').ChildProcess>} */
const live = new Set();

/** Cores this process may run on (nproc). */
export function coreCount() {
  return Number(spawnSync('nproc', { encoding: 'utf8' }).stdout.trim()) || 1;
}

/** Whether pinning is in effect (taskset present and at least two cores). */
export function pinning() {
  return TASKSET !== null && coreCount() >= 2;
}

/**
 * The command line, prefixed with `taskset -c CORE` when pinning is in effect.
 * @param {string} core @param {string} cmd @param {string[]} args
 * @returns {[string, string[]]}
 */
export function pinned(core, cmd, args) {
  return pinning() ? [/** @type {string} */ (TASKSET), ['-c', core, cmd, ...args]] : [cmd, args];
}

/**
 * Kills a child's whole process group (it was spawned detached, so it leads one).
 * @param {import('node:child_process').ChildProcess} child @param {NodeJS.Signals} [signal]
 */
export function killGroup(child, signal = 'SIGKILL') {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    /* already gone */
  }
  live.delete(child);
}

export function killAll() {
  for (const child of [...live]) killGroup(child);
}

process.on('exit', killAll);
for (const sig of /** @type {const} */ (['SIGINT', 'SIGTERM', 'SIGHUP'])) {
  process.on(sig, () => {
    killAll();
    process.exit(130);
  });
}

/**
 * Spawns a long-running child in its own process group, stderr to a log file.
 * @param {string} cmd @param {string[]} args
 * @param {{ core?: string, log?: string, env?: NodeJS.ProcessEnv, cwd?: string }} [opts]
 */
export function startChild(cmd, args, opts = {}) {
  const [c, a] = opts.core === undefined ? [cmd, args] : pinned(opts.core, cmd, args);
  const errFd = opts.log ? openSync(opts.log, 'a') : 'ignore';
  const child = spawn(c, a, {
    detached: true,
    stdio: ['ignore', 'pipe', errFd],
    env: opts.env ?? process.env,
    cwd: opts.cwd,
  });
  if (typeof errFd === 'number') closeSync(errFd);
  live.add(child); // stays listed after the leader exits: its group may outlive it
  return child;
}

/**
 * Resolves with the first stdout line matching `re` (its match), rejects if the child exits or
 * `timeoutMs` passes first.
 * @param {import('node:child_process').ChildProcess} child @param {RegExp} re @param {number} timeoutMs
 * @returns {Promise<RegExpExecArray>}
 */
export function waitForLine(child, re, timeoutMs, what = 'child') {
  return new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => done(new Error(`${what}: no line matching ${re} within ${timeoutMs} ms`)), timeoutMs);
    const onData = (/** @type {Buffer} */ chunk) => {
      buf += chunk.toString('utf8');
      const m = re.exec(buf);
      if (m) done(null, m);
    };
    const onExit = (/** @type {number|null} */ code) => done(new Error(`${what} exited (code ${code}) before printing ${re}; output: ${buf.slice(-500)}`));
    /** @param {Error|null} err @param {RegExpExecArray} [m] */
    function done(err, m) {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.off('exit', onExit);
      if (err) reject(err);
      else resolve(/** @type {RegExpExecArray} */ (m));
    }
    child.stdout?.on('data', onData);
    child.on('exit', onExit);
  });
}

/**
 * Starts a server that prints `listening on <URL>` and resolves with its URL. It is pinned to
 * `core` (default SERVER_CORE; null: not pinned).
 * @param {string} what @param {string} cmd @param {string[]} args
 * @param {{ log: string, env?: NodeJS.ProcessEnv, cwd?: string, timeoutMs?: number, core?: string|null }} opts
 */
export async function startServer(what, cmd, args, opts) {
  const core = opts.core === undefined ? SERVER_CORE : opts.core ?? undefined;
  const child = startChild(cmd, args, { ...opts, core });
  try {
    const m = await waitForLine(child, /listening on (https?:\/\/[^\s]+)/, opts.timeoutMs ?? 120_000, what);
    const url = new URL(m[1]);
    if (url.hostname !== '127.0.0.1') throw new Error(`${what} listens on ${url.hostname}, expected 127.0.0.1`);
    child.stdout?.resume();
    return { child, url: url.origin, pid: /** @type {number} */ (child.pid) };
  } catch (err) {
    killGroup(child);
    throw err;
  }
}

/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat. @param {number} pid */
export function cpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK; // utime, stime (fields 14, 15)
  } catch {
    return NaN;
  }
}

/** Resident set size in MB (VmRSS of /proc/<pid>/status). @param {number} pid */
export function rssMb(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

/**
 * Runs a command to completion (bounded by timeoutMs) and returns stdout, stderr, code and
 * wall time in ms.
 * @param {string} cmd @param {string[]} args @param {{ timeoutMs?: number, core?: string, env?: NodeJS.ProcessEnv }} [opts]
 * @returns {Promise<{ code: number|null, stdout: string, stderr: string, ms: number }>}
 */
export function runToEnd(cmd, args, opts = {}) {
  return new Promise((resolve, reject) => {
    const [c, a] = opts.core === undefined ? [cmd, args] : pinned(opts.core, cmd, args);
    const started = process.hrtime.bigint();
    const child = spawn(c, a, { detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: opts.env ?? process.env });
    live.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      killGroup(child);
      reject(new Error(`${cmd} ${args.join(' ').slice(0, 200)}: timed out after ${opts.timeoutMs} ms`));
    }, opts.timeoutMs ?? 600_000);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code) => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      clearTimeout(timer);
      live.delete(child);
      resolve({ code, stdout, stderr, ms });
    });
  });
}
