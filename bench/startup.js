#!/usr/bin/env node
/**
 * The CLI's start-up devices, each switched off alone (bench/lib/cli.js `startupDevices`):
 * `node bench/startup.js [--runs N]` after `npm run build`. Prints the medians and each device's
 * gain (its copy without it, minus the copy with everything), for `tokenctl --help` and
 * `tokenctl introspect --json` on a one-token store.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { startupDevices } from './lib/cli.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const { values } = parseArgs({ options: { runs: { type: 'string', default: '15' } } });
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
  const figures = await startupDevices({ db, token, runs: Number(values.runs), workDir });
  const all = /** @type {Record<'help'|'introspect', number>} */ (figures.all);
  process.stdout.write(`median ms over ${values.runs} runs each, interleaved\n`);
  process.stdout.write(`${'variant'.padEnd(16)} ${'--help'.padStart(8)} ${'introspect'.padStart(11)}   gain of the device (help / introspect)\n`);
  for (const [name, f] of Object.entries(figures)) {
    const gain = name === 'all' ? '' : `${(f.help - all.help).toFixed(0)} / ${(f.introspect - all.introspect).toFixed(0)} ms`;
    process.stdout.write(`${name.padEnd(16)} ${f.help.toFixed(0).padStart(8)} ${f.introspect.toFixed(0).padStart(11)}   ${gain}\n`);
  }
} finally {
  rmSync(workDir, { recursive: true, force: true });
}
