import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/memory/index.js';
import { Engine } from '../../src/engine/engine.js';
import { createClient, tempStore, type TempStore } from '../helpers/cli.js';

describe('token issue --count', () => {
  let store: TempStore;
  let id: string;
  beforeAll(async () => {
    store = tempStore({ inProcess: true });
    id = (await createClient(store)).id;
  });
  afterAll(() => store.cleanup());

  it('makes N grants in one call: N distinct token pairs, each active', async () => {
    const started = Date.now();
    const grants = await store.json<{ access_token: string; refresh_token: string; jti: string }[]>(['token', 'issue', '--client', id, '--user', 'load', '--count', '50']);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(grants).toHaveLength(50);
    expect(new Set(grants.map((g) => g.access_token)).size).toBe(50);
    expect(new Set(grants.map((g) => g.refresh_token)).size).toBe(50);
    const status = await store.json<{ tokens: { access_token: { active: number }; refresh_token: { active: number } } }>(['status']);
    expect(status.tokens.access_token.active).toBe(50);
    expect(status.tokens.refresh_token.active).toBe(50);
    expect((await store.json(['introspect', grants[49]!.access_token])).jti).toBe(grants[49]!.jti);
  });

  it('is one transaction: one insertTokens call with all 2N records', async () => {
    const memory = new MemoryStore();
    const engine = new Engine({ store: memory });
    const client = await engine.createClient({ name: 'c' }, 'test');
    const calls: number[] = [];
    const insert = memory.insertTokens.bind(memory);
    memory.insertTokens = async (records) => {
      calls.push(records.length);
      return insert(records);
    };
    await engine.issueMany({ clientId: client.client.client_id, username: 'u' }, 7);
    expect(calls).toEqual([14]);
  });

  it('refuses 0 and more than 10,000', async () => {
    const [zero, many] = await Promise.all([
      store.run(['token', 'issue', '--client', id, '--user', 'u', '--count', '0']),
      store.run(['token', 'issue', '--client', id, '--user', 'u', '--count', '10001']),
    ]);
    expect(zero.code).toBe(2);
    expect(many.code).toBe(2);
  });
});
