import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempStore, type TempStore } from '../helpers/cli.js';

describe('a client without --scope', () => {
  let store: TempStore;
  beforeAll(() => {
    store = tempStore({ inProcess: true });
  });
  afterAll(() => store.cleanup());

  it('shows that it is granted any scope, as it is, rather than "(none)"', async () => {
    const id = (await store.run(['client', 'create', '--name', 'Mobile App', '--public', '--bare'])).stdout.trim();
    const shown = await store.run(['client', 'show', id]);
    expect(shown.stdout).toMatch(/^scope: +\(any: no restriction\)$/m);
    expect((await store.run(['client', 'list'])).stdout).toMatch(new RegExp(`^${id} +Mobile App +public +\\(any\\)`, 'm'));
    // …and it is: a token of any scope is issued to it.
    const issued = await store.json<{ scope: string }>(['token', 'issue', '--client', id, '--user', 'u', '--scope', 'orders:write admin']);
    expect(issued.scope).toBe('orders:write admin');
  });
});
