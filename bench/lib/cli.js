/**
 * The command-line figures: cold start of `tokenctl introspect` beside a plain better-sqlite3
 * script and `node -e 0` (each a new process, alternated, pinned to the server core while no
 * server runs), and the 100,000-token bulk revocation.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { copyStore } from './stores.js';
import { runToEnd, SERVER_CORE } from './proc.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const RUN = join(ROOT, 'bin/run.js');
const PLAIN = join(ROOT, 'bench/servers/plain-sqlite-read.js');

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
