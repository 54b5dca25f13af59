import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempStore, type TempStore } from '../helpers/cli.js';

/** `--bare`: the values a script assigns to a variable, one line each, and nothing else on stdout. */
describe('--bare', () => {
  let store: TempStore;
  beforeAll(() => {
    store = tempStore({ inProcess: true });
  });
  afterAll(() => store.cleanup());

  it('client create: the client id alone; token issue: both tokens on one line; token list: the jtis', async () => {
    const created = await store.run(['client', 'create', '--name', 'Billing App', '--bare']);
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(/^billing-app-[0-9a-f]{8}\n$/);
    expect(created.stderr).toBe(''); // no secret notice either: --json keeps the secret
    const client = created.stdout.trim();

    const issued = await store.run(['token', 'issue', '--client', client, '--user', 'alice', '--bare']);
    expect(issued.code).toBe(0);
    const [access, refresh, ...rest] = issued.stdout.trim().split(' ');
    expect(access).toMatch(/^tca_[A-Za-z0-9_-]{43}$/);
    expect(refresh).toMatch(/^tcr_[A-Za-z0-9_-]{43}$/);
    expect(rest).toEqual([]);
    expect((await store.json(['introspect', access!])).active).toBe(true);

    const many = await store.run(['token', 'issue', '--client', client, '--user', 'bob', '--count', '2', '--bare']);
    expect(many.stdout.trim().split('\n')).toHaveLength(2);

    const listed = await store.run(['token', 'list', '--user', 'alice', '--bare']);
    const { tokens } = await store.json<{ tokens: { jti: string }[] }>(['token', 'list', '--user', 'alice']);
    expect(listed.stdout).toBe(tokens.map((t) => `${t.jti}\n`).join(''));
  });

  it('errors stay text on stderr; --bare and --json together are refused', async () => {
    const missing = await store.run(['token', 'issue', '--client', 'nobody', '--user', 'a', '--bare']);
    expect(missing.code).toBe(4);
    expect(missing.stdout).toBe('');
    expect(missing.stderr).toMatch(/^Error: no client with id "nobody"/);
    const both = await store.run(['token', 'list', '--bare', '--json']);
    expect(both.code).toBe(2);
    expect(both.stdout).toBe('');
  });
});
