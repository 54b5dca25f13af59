/**
 * The tokenctl stores the benchmark needs, built by bench/setup-store.js as templates and
 * cached between runs (a million tokens take a minute to insert on a busy 2-core machine).
 * The cache key covers the schema a new store gets, the token format and the setup script, so
 * a schema change rebuilds them; a cached store older than a week is rebuilt too (its tokens
 * expire after 30 days). Every run that writes works on a fresh copy of a template.
 */
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runToEnd } from './proc.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SETUP = join(ROOT, 'bench/setup-store.js');
const MAX_AGE_MS = 7 * 86_400_000;
export const CACHE_DIR = join(tmpdir(), 'tokenctl-bench-cache');

/**
 * What each store holds. `pool` is the revocation pool (fresh tokens, used once each) plus the
 * refresh tokens; `bulk` holds 100,000 tokens of one client for the bulk revocation. The refresh
 * load is spread over 20,000 refresh tokens (a couple of refreshes each per run, as clients that
 * refresh when their access token expires): with 1,000, each was refreshed some 40 times a minute,
 * the pattern `serve --max-refreshes-per-minute` exists to stop, whose count then dominated.
 * `pool` also holds the authorization codes of the code exchange (used once each, so a fresh copy
 * per repetition), in the same file as the refresh tokens so that both grants write into tables
 * of the same size: enough for twice the warm-up and run at the refresh figure's rate.
 * @param {boolean} quick
 */
export function storeSpecs(quick) {
  /** @type {Record<string, { access: number, refresh: number, sample?: number, bulkClient?: string, bulk?: number, codes?: number }>} */
  const specs = {
    t1k: { access: 1_000, refresh: 0 },
    t1m: { access: 1_000_000, refresh: 0, sample: 20_000 },
    pool: { access: quick ? 100_000 : 250_000, refresh: 20_000, codes: quick ? 30_000 : 80_000 },
    bulk: { access: 10, refresh: 0, bulkClient: 'bulk', bulk: 100_000 },
  };
  return specs;
}

/**
 * A hash of what decides a store's content: the schema a new store gets, the token format, and
 * the setup script. A change to the store's code that keeps the schema keeps the cache.
 * @param {string} scratch a file name it may create and delete
 */
async function cacheKey(scratch) {
  const r = await runToEnd(process.execPath, [SETUP, '--db', scratch, '--schema'], { timeoutMs: 60_000 });
  if (r.code !== 0) throw new Error(`cannot create an empty store: ${r.stderr.trim().split('\n').slice(-3).join(' ')}`);
  return createHash('sha256').update(r.stdout).update(readFileSync(SETUP)).digest('hex').slice(0, 16);
}

/**
 * Builds (or finds in the cache) every template store.
 * @param {{ quick: boolean, rebuild: boolean, log: (s: string) => void }} o
 * @returns {Promise<Record<string, { db: string, accessFile: string, refreshFile: string, codesFile: string }>>}
 */
export async function prepareStores(o) {
  mkdirSync(CACHE_DIR, { recursive: true });
  const dir = join(CACHE_DIR, await cacheKey(join(CACHE_DIR, `schema-${process.pid}.db`)));
  mkdirSync(dir, { recursive: true });
  /** @type {Record<string, { db: string, accessFile: string, refreshFile: string, codesFile: string }>} */
  const out = {};
  for (const [name, spec] of Object.entries(storeSpecs(o.quick))) {
    const tag = `${name}-${spec.access}${spec.refresh ? `-r${spec.refresh}` : ''}${spec.codes ? `-c${spec.codes}` : ''}`;
    const db = join(dir, `${tag}.db`);
    const done = join(dir, `${tag}.json`);
    const files = { db, accessFile: join(dir, `${tag}-access.txt`), refreshFile: join(dir, `${tag}-refresh.txt`), codesFile: join(dir, `${tag}-codes.txt`) };
    const fresh = existsSync(done) && Date.now() - statSync(done).mtimeMs < MAX_AGE_MS;
    if (fresh && !o.rebuild) {
      out[name] = files;
      continue;
    }
    o.log(`  building store ${name} (${(spec.access + (spec.bulk ?? 0) + spec.refresh).toLocaleString('en-US')} tokens) in ${dir}`);
    const tmp = join(dir, `${tag}.building-${process.pid}`);
    const args = [SETUP, '--db', `${tmp}.db`, '--access', String(spec.access), '--refresh', String(spec.refresh), '--out', tmp];
    if (spec.sample !== undefined) args.push('--sample', String(spec.sample));
    if (spec.bulkClient !== undefined) args.push('--bulk-client', String(spec.bulkClient), '--bulk', String(spec.bulk));
    if (spec.codes !== undefined) args.push('--codes', String(spec.codes));
    const r = await runToEnd(process.execPath, args, { timeoutMs: 15 * 60_000 });
    if (r.code !== 0) throw new Error(`setup of store ${name} failed (exit ${r.code}): ${r.stderr.trim().split('\n').slice(-5).join('\n')}`);
    const wal = `${tmp}.db-wal`;
    if (existsSync(wal) && statSync(wal).size > 0) throw new Error(`setup of store ${name} left a non-empty ${wal}`);
    for (const suffix of ['-wal', '-shm']) rmSync(`${tmp}.db${suffix}`, { force: true });
    renameSync(`${tmp}.db`, db);
    renameSync(`${tmp}-access.txt`, files.accessFile);
    renameSync(`${tmp}-refresh.txt`, files.refreshFile);
    if (spec.codes !== undefined) renameSync(`${tmp}-codes.txt`, files.codesFile);
    writeFileSync(done, r.stdout);
    o.log(`    ${r.stdout.trim()}`);
    out[name] = files;
  }
  removeOtherCaches(dir);
  return out;
}

/** Drops caches for other schemas (half a gigabyte each), unless touched in the last hour. */
function removeOtherCaches(/** @type {string} */ keep) {
  for (const name of readdirSync(CACHE_DIR)) {
    const p = join(CACHE_DIR, name);
    if (p !== keep && statSync(p).isDirectory() && Date.now() - statSync(p).mtimeMs > 3_600_000) rmSync(p, { recursive: true, force: true });
  }
}

/** Copies a template store to `dest` (a fresh file for a run that writes). @param {string} template @param {string} dest */
export function copyStore(template, dest) {
  for (const suffix of ['', '-wal', '-shm']) rmSync(dest + suffix, { force: true });
  copyFileSync(template, dest);
  return dest;
}
