#!/usr/bin/env node
/**
 * The CLI's start-up devices, each switched off alone (bench/lib/cli.js `startupDevices`):
 * `node bench/startup.js [--runs N]` after `npm run build`. Prints the medians and each device's
 * gain (its copy without it, minus the copy with everything), for `tokenctl --help` and
 * `tokenctl introspect --json` on a one-token store. `--compare NAME=DIR` (repeatable) adds another
 * built package (bin/, dist/, package.json, oclif.manifest.json, node_modules) as it is.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { startupDevices } from './lib/cli.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const { values } = parseArgs({ options: { runs: { type: 'string', default: '15' }, compare: { type: 'string', multiple: true, default: [] } } });
const compare = Object.fromEntries(values.compare.map((c) => [c.slice(0, c.indexOf('=')), c.slice(c.indexOf('=') + 1)]));
const workDir = mkdtempSync(join(tmpdir(), 'tokenctl-startup-'));
try {
  const db = join(workDir, 'tokens.db');
  /** @param {string[]} args */
  const tokenctl = (...args) => {
    const r = spawnSync(process.execPath, [join(ROOT, 'bin/run.js'), ...args, '--db', db, '--json'], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`tokenctl ${args.join(' ')}: ${r.stderr}`);
    return JSON.parse(r.stdout);
  };
  const client = tokenctl('client', 'create', '--name', 'startup');
  const { access_token: token } = tokenctl('token', 'issue', '--client', client.client_id, '--user', 'startup');
  const figures = await startupDevices({ db, token, runs: Number(values.runs), workDir, compare });
  const all = /** @type {Record<string, number>} */ (figures.all);
  const cols = /** @type {const} */ (['help', 'introspect', 'help_cpu', 'introspect_cpu']);
  const out = (/** @type {string} */ line) => process.stdout.write(`${line}\n`);
  out(`medians over ${values.runs} runs of each, interleaved; ms (wall, and CPU time of the process); + the device's gain`);
  out(`${'variant'.padEnd(16)}${cols.map((c) => c.padStart(22)).join('')}`);
  for (const [name, f] of Object.entries(figures)) {
    const cell = (/** @type {typeof cols[number]} */ c) => `${f[c].toFixed(0)}${name === 'all' ? '' : ` (${(f[c] - (all[c] ?? 0) >= 0 ? '+' : '')}${(f[c] - (all[c] ?? 0)).toFixed(0)})`}`;
    out(`${name.padEnd(16)}${cols.map((c) => cell(c).padStart(22)).join('')}`);
  }
} finally {
  rmSync(workDir, { recursive: true, force: true });
}
