/**
 * The command-line figures: cold start of `tokenctl introspect` beside a plain better-sqlite3
 * script and `node -e 0` (each a new process, alternated, pinned to the server core while no
 * server runs), and the 100,000-token bulk revocation.
 */
import { cpSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { copyStore } from './stores.js';
import { runToEnd, SERVER_CORE } from './proc.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const RUN = join(ROOT, 'bin/run.js');
const PLAIN = join(ROOT, 'bench/servers/plain-sqlite-read.js');
const CPU_AT_EXIT = join(ROOT, 'bench/lib/cpu-at-exit.cjs');

/** @param {number[]} xs */
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? /** @type {number} */ (s[m]) : (/** @type {number} */ (s[m - 1]) + /** @type {number} */ (s[m])) / 2;
};

/**
 * Median wall times (ms) of the three commands, `runs` times each, alternating.
 * @param {{ db: string, token: string, runs: number }} o
 * @returns {Promise<{ node_ms: number, plain_ms: number, tokenctl_ms: number, tool: string }>}
 */
export async function cliColdStarts(o) {
  const node = process.execPath;
  /** @type {Record<'node'|'plain'|'tokenctl', string[]>} */
  const cmds = {
    node: [node, '-e', '0'],
    plain: [node, PLAIN, o.db, o.token],
    tokenctl: [node, RUN, 'introspect', o.token, '--db', o.db, '--json'],
  };
  // First runs fill the OS file cache and check each command does what it should.
  const check = await runToEnd(node, /** @type {string[]} */ (cmds.tokenctl.slice(1)), { timeoutMs: 60_000 });
  const answer = JSON.parse(check.stdout || '{}');
  if (check.code !== 0 || answer.active !== true) {
    throw new Error(`tokenctl introspect did not report the token active (exit ${check.code}): ${(check.stdout + check.stderr).slice(0, 300)}`);
  }
  const plain = await runToEnd(node, /** @type {string[]} */ (cmds.plain.slice(1)), { timeoutMs: 60_000 });
  if (plain.code !== 0) throw new Error(`plain-sqlite-read failed: ${plain.stderr.slice(0, 300)}`);

  // Each run a new process, the three commands interleaved and the order flipped every round
  // (not hyperfine, which runs all of one command, then all of the next: a slow minute on a
  // shared host would then land on one contender only).
  /** @type {Record<string, number[]>} */
  const times = { node: [], plain: [], tokenctl: [] };
  const order = /** @type {const} */ (['node', 'plain', 'tokenctl']);
  for (let i = 0; i < o.runs; i++) {
    for (const name of i % 2 ? [...order].reverse() : order) {
      const [cmd, ...args] = cmds[name];
      const r = await runToEnd(/** @type {string} */ (cmd), args, { core: SERVER_CORE, timeoutMs: 60_000 });
      if (r.code !== 0) throw new Error(`${name} exited ${r.code}: ${r.stderr.slice(0, 300)}`);
      /** @type {number[]} */ (times[name]).push(r.ms);
    }
  }
  return { node_ms: median(times.node ?? []), plain_ms: median(times.plain ?? []), tokenctl_ms: median(times.tokenctl ?? []), tool: 'spawn, interleaved, pinned' };
}

/**
 * `tokenctl revoke --client bulk --yes --json` on a fresh copy of the bulk store.
 * @param {{ template: string, workDir: string, rep: number, expect: number }} o
 * @returns {Promise<{ elapsed_ms: number, wall_ms: number, revoked: number }>}
 */
export async function bulkRevoke(o) {
  const db = copyStore(o.template, join(o.workDir, `bulk-${o.rep}.db`));
  const r = await runToEnd(process.execPath, [RUN, 'revoke', '--client', 'bulk', '--yes', '--json', '--db', db], { core: SERVER_CORE, timeoutMs: 300_000 });
  let out;
  try {
    out = JSON.parse(r.stdout);
  } catch {
    throw new Error(`tokenctl revoke --client gave no JSON (exit ${r.code}): ${(r.stdout + r.stderr).slice(0, 300)}`);
  }
  if (r.code !== 0 || out.revoked !== o.expect) throw new Error(`bulk revocation revoked ${out.revoked} tokens, expected ${o.expect} (exit ${r.code})`);
  return { elapsed_ms: Number(out.elapsed_ms), wall_ms: r.ms, revoked: out.revoked };
}

/**
 * The start-up devices, each switched off alone in a copy of the built package (bin/, dist/,
 * package.json and the manifest; node_modules linked), so that what is measured is the shipped
 * code, not a flag in it:
 *   all              as built: the bundle, its V8 code cache, the root plugin
 *   no_code_cache    the bundle compiled at every start: its cache file deleted before each run
 *                    (a read-only directory would not do: root writes there all the same)
 *   no_root_plugin   oclif's own plugin loading (a hook entry in package.json makes the root
 *                    plugin step aside, as it does for any package it does not cover)
 *   no_bundle        the ES modules tsc wrote, imported one by one
 * (Stand-ins for modules oclif loads were measured the same way and removed: what they saved was
 * within the noise.)
 * Each copy runs `tokenctl --help` and `tokenctl introspect TOKEN --json`, all interleaved and
 * the order flipped every round; medians of wall time and of the process's CPU time (user +
 * system, bench/lib/cpu-at-exit.cjs), in ms.
 * `o.compare` adds other built packages as they are (name → directory), e.g. an earlier build.
 * @param {{ db: string, token: string, runs: number, workDir: string, compare?: Record<string, string> }} o
 * @returns {Promise<Record<string, Record<'help'|'introspect'|'help_cpu'|'introspect_cpu', number>>>}
 */
export async function startupDevices(o) {
  const pjson = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  /** The bundle (package.json `oclif.commands.target`), relative to the package root. */
  const bundle = /** @type {string} */ (pjson.oclif.commands.target).replace(/^\.\//, '');
  const esm = bundle.replace(/\.cjs$/, '.js');
  /** @param {string} name @param {(dir: string, pjson: any) => void} change */
  const variant = (name, change) => {
    const dir = join(o.workDir, `startup-${name}`);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    for (const part of ['bin', 'dist', 'oclif.manifest.json']) cpSync(join(ROOT, part), join(dir, part), { recursive: true });
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
    const copy = JSON.parse(JSON.stringify(pjson));
    change(dir, copy);
    writeFileSync(join(dir, 'package.json'), JSON.stringify(copy, null, 2));
    return dir;
  };
  const dirs = {
    all: variant('all', () => undefined),
    no_code_cache: variant('no-code-cache', () => undefined),
    no_root_plugin: variant('no-root-plugin', (_dir, p) => {
      p.oclif.hooks = { 'tokenctl-bench-none': [] };
    }),
    no_bundle: variant('no-bundle', (dir, p) => {
      p.oclif.commands.target = `./${esm}`;
      writeFileSync(join(dir, 'bin/run.js'), `import { run } from '../${esm}';\nawait run(new URL('..', import.meta.url));\n`);
    }),
  };
  /** Before each run of a command of `name`: what makes it that variant. @type {Record<string, () => void>} */
  const beforeRun = { no_code_cache: () => rmSync(join(dirs.no_code_cache, `${bundle}.cache`), { force: true }) };
  const prepare = (/** @type {string} */ command) => beforeRun[/** @type {string} */ (command.split('.')[0])]?.();
  const node = process.execPath;
  /** @type {Record<string, string[]>} */
  const cmds = {};
  for (const [name, dir] of Object.entries({ ...dirs, ...o.compare })) {
    cmds[`${name}.help`] = [join(dir, 'bin/run.js'), '--help'];
    cmds[`${name}.introspect`] = [join(dir, 'bin/run.js'), 'introspect', o.token, '--db', o.db, '--json'];
  }
  try {
    for (const [name, args] of Object.entries(cmds)) {
      prepare(name);
      const r = await runToEnd(node, args, { timeoutMs: 60_000 });
      const ok = name.endsWith('.help') ? r.code === 0 && r.stdout.includes('USAGE') : r.code === 0 && JSON.parse(r.stdout || '{}').active === true;
      if (!ok) throw new Error(`${name} failed (exit ${r.code}): ${(r.stdout + r.stderr).slice(0, 300)}`);
    }
    /** @type {Record<string, number[]>} */
    const times = Object.fromEntries(Object.keys(cmds).map((k) => [k, []]));
    /** @type {Record<string, number[]>} */
    const cpu = Object.fromEntries(Object.keys(cmds).map((k) => [k, []]));
    const cpuFile = join(o.workDir, 'cpu-us');
    const env = { ...process.env, BENCH_CPU_FILE: cpuFile };
    const order = Object.keys(cmds);
    for (let i = 0; i < o.runs; i++) {
      for (const name of i % 2 ? [...order].reverse() : order) {
        prepare(name);
        const r = await runToEnd(node, ['--require', CPU_AT_EXIT, .../** @type {string[]} */ (cmds[name])], { core: SERVER_CORE, timeoutMs: 60_000, env });
        if (r.code !== 0) throw new Error(`${name} exited ${r.code}: ${r.stderr.slice(0, 300)}`);
        /** @type {number[]} */ (times[name]).push(r.ms);
        /** @type {number[]} */ (cpu[name]).push(Number(readFileSync(cpuFile, 'utf8')) / 1000);
      }
    }
    /** @type {Record<string, Record<'help'|'introspect'|'help_cpu'|'introspect_cpu', number>>} */
    const out = {};
    for (const name of Object.keys({ ...dirs, ...o.compare })) {
      const [help, introspect] = [`${name}.help`, `${name}.introspect`];
      out[name] = { help: median(times[help] ?? []), introspect: median(times[introspect] ?? []), help_cpu: median(cpu[help] ?? []), introspect_cpu: median(cpu[introspect] ?? []) };
    }
    return out;
  } finally {
    for (const dir of Object.values(dirs)) rmSync(dir, { recursive: true, force: true });
  }
}
