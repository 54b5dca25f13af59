import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, tempStore, type TempStore } from '../helpers/cli.js';

/**
 * Several tokenctl processes on one SQLite store at once, as when an operator works beside a
 * running server: every one succeeds, none sees "database is locked".
 */
describe('two writers on one store', () => {
  let store: TempStore;
  let clients: string[];
  beforeAll(async () => {
    store = tempStore();
    await store.json(['status']); // create the store before the race
    clients = (await Promise.all([createClient(store), createClient(store)])).map((c) => c.id);
  });
  afterAll(() => store.cleanup());

  it('2 × 10 concurrent token issue processes all succeed', async () => {
    const runs = clients.flatMap((client) =>
      Array.from({ length: 10 }, (_, i) => store.run(['token', 'issue', '--client', client, '--user', `user-${i}`, '--json'])),
    );
    const results = await Promise.all(runs);
    for (const r of results) {
      expect(r.stderr).not.toMatch(/locked|busy/i);
      expect(r.code, r.stderr).toBe(0);
    }
    const jtis = new Set(results.map((r) => r.json().jti));
    expect(jtis.size).toBe(20);
    const s = await store.json(['status']);
    expect(s.tokens.access_token.active).toBe(20);
    expect(s.tokens.refresh_token.active).toBe(20);
  }, 60_000);
});
