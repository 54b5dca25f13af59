import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { PG_URL } from '../helpers/pg.js';

// The bench builds its stores through dist/ and, past a size, with SQL of its own: a schema
// change that it misses would otherwise surface only when someone runs `npm run bench`.
const { setupStore } = (await import(new URL('../../bench/setup-store.js', import.meta.url).href)) as {
  setupStore: (o: Record<string, unknown>) => Promise<{ access: number; refresh: number; codes: number; bulk: number }>;
};

const run = promisify(execFile);
const ROOT = new URL('../../', import.meta.url).pathname;

describe('bench store set-up and micro benchmarks on the current schema', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tokenctl-bench-setup-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('builds tokens through both loaders, a bulk client and accepted codes', async () => {
    const out = join(dir, 'pool');
    // 50,000 access tokens take the raw loader (RAW_FROM), the refresh tokens the store's own.
    const result = await setupStore({ db: join(dir, 'pool.db'), access: 50_000, refresh: 20, out, sample: 100, bulkClient: 'bulk', bulk: 30, codes: 12 });
    expect(result).toMatchObject({ access: 50_000, refresh: 20, bulk: 30, codes: 12 });
    const lines = (f: string) => readFileSync(`${out}-${f}.txt`, 'utf8').trim().split('\n');
    expect(lines('access')).toHaveLength(100);
    expect(lines('refresh')).toHaveLength(20);
    expect(lines('codes')).toHaveLength(12);
    expect(lines('codes')[0]).toMatch(/^code=\S+&code_verifier=[A-Za-z0-9_-]{43}$/);
  }, 60_000);

  // The micro benchmarks write records through the stores' own methods (bench/lib/records.js):
  // each one, at its smallest, must still run to its figures.
  it('runs every micro benchmark at its smallest', async () => {
    const out = join(dir, 'pool');
    const micro = async (script: string, args: string[], env: Record<string, string> = {}) => {
      const { stdout } = await run(process.execPath, [join(ROOT, 'bench/micro', script), ...args], { cwd: ROOT, env: { ...process.env, ...env }, timeout: 60_000 });
      return stdout;
    };
    expect(await micro('poll-cycle.js', ['5', '5'])).toMatch(/µs CPU per cycle/);
    expect(await micro('revoke-events.js', ['1', '50'])).toMatch(/^receivers .* per revocation/m);
    expect(await micro('dpop-proof.js', ['--n', '50'])).toMatch(/\d/);
    expect(await micro('dpop-parts.js', ['--n', '50', '--rounds', '1'])).toMatch(/signature_verify/);
    expect(await micro('dpop-engine.js', ['--db', join(dir, 'pool.db'), '--tokens', `${out}-refresh.txt`, '--n', '20', '--rounds', '1'])).toMatch(/"dpop_extra_us"/);
    expect(await micro('lookups.js', [join(dir, 'pool.db'), `${out}-access.txt`])).toMatch(/\d/);
    expect(await micro('refresh-writes.js', [join(dir, 'pool.db'), '2'])).toMatch(/\d/);
    if (PG_URL) expect(await micro('pg-revocations.js', ['1', '5', '1', '2'], { TOKENCTL_BENCH_PG: PG_URL })).toMatch(/revocations\/s; per revocation/);
  }, 120_000);
});
