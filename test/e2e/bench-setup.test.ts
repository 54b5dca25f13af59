import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

// The bench builds its stores through dist/ and, past a size, with SQL of its own: a schema
// change that it misses would otherwise surface only when someone runs `npm run bench`.
const { setupStore } = (await import(new URL('../../bench/setup-store.js', import.meta.url).href)) as {
  setupStore: (o: Record<string, unknown>) => Promise<{ access: number; refresh: number; codes: number; bulk: number }>;
};

describe('bench store set-up on the current schema', () => {
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
});
