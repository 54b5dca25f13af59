#!/usr/bin/env node
/**
 * Makes the CLI bundle's code cache (dist/main/index.cjs.cache, see bin/load-bundle.cjs), run by
 * `npm run build` after the bundle: V8 keeps what one start compiled, so the cache is made by the
 * command that most needs to start fast, `introspect` of an active token (an operator's or a
 * support person's first command, and the one the benchmark times), on a throw-away store.
 * Other commands share most of what it compiled (oclif, flags, the store) and compile the rest.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const cacheFile = join(root, 'dist/main/index.cjs.cache');
const dir = mkdtempSync(join(tmpdir(), 'tokenctl-code-cache-'));

/** Runs `tokenctl …args --db <throw-away store> --json` and returns its JSON output. */
function tokenctl(...args) {
  const r = spawnSync(process.execPath, [join(root, 'bin/run.js'), ...args, '--db', join(dir, 'tokens.db'), '--json'], {
    encoding: 'utf8',
    env: { ...process.env, HOME: dir, XDG_DATA_HOME: dir },
  });
  if (r.status !== 0 && r.status !== 3) throw new Error(`tokenctl ${args[0]} exited ${r.status}: ${r.stderr.trim()}`);
  return JSON.parse(r.stdout);
}

try {
  const client = tokenctl('client', 'create', '--name', 'code-cache');
  const issued = tokenctl('token', 'issue', '--client', client.client_id, '--user', 'code-cache');
  rmSync(cacheFile, { force: true }); // made by the commands above: the next start writes it anew
  const answer = tokenctl('introspect', issued.access_token);
  if (answer.active !== true) throw new Error('introspect did not find the token it was given active');
  if (!existsSync(cacheFile)) throw new Error(`no code cache was written to ${cacheFile}`);
  // The loader's own check (bin/load-bundle.cjs): header "tkc2", then the SHA-256 of V8's data.
  const cache = readFileSync(cacheFile);
  const digest = createHash('sha256').update(cache.subarray(44)).digest();
  if (cache.readUInt32LE(0) !== 0x32636b74 || !digest.equals(cache.subarray(12, 44))) {
    throw new Error(`the code cache written to ${cacheFile} does not pass the loader's integrity check`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
