import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, issue, tempStore, type TempStore } from '../helpers/cli.js';
import { runCommand } from '../helpers/run-command.js';

/**
 * Where a command acts: an empty or unknown store location is refused before anything is opened
 * or changed, and a destructive command names the store it acted on, in text and in --json.
 */
describe('an empty or unknown store location', () => {
  let store: TempStore;
  beforeAll(async () => {
    store = tempStore({ inProcess: true });
    const { id } = await createClient(store);
    await issue(store, id, 'zed');
  });
  afterAll(() => store.cleanup());
  const activeOfZed = async () => (await store.json<{ total: number }>(['token', 'list', '--user', 'zed', '--state', 'active'])).total;

  it("in-process, the default store is the test's private one, not the user's", async () => {
    const r = await runCommand(['status']);
    expect(r.code).toBe(6);
    expect(r.stderr).toContain(`no tokenctl store at ${tmpdir()}`);
  });

  it('--db "" (an unset variable passed as --db "$PGURL") is refused, exit 2, before any store is opened', async () => {
    // TOKENCTL_DB names the store that an empty --db used to fall back from.
    const r = await runCommand(['revoke', '--user', 'zed', '--db', '', '--yes'], { env: { TOKENCTL_DB: store.db } });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^Error: --db is empty: it names no store, so nothing was opened or changed\nHint: give a SQLite file path or a postgres:\/\/ URL .*leave --db out for the default store, \S+tokens\.db\n$/);
    expect(await activeOfZed()).toBe(2);
  });

  it('with --json: one JSON error', async () => {
    const r = await runCommand(['purge', '--db', '  ', '--yes', '--json']);
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stderr)).toMatchObject({ error: { code: 'empty_store_location', message: expect.stringContaining('--db is empty') } });
  });

  it('TOKENCTL_DB set but empty is refused too, saying so', async () => {
    const r = await runCommand(['revoke', '--user', 'zed', '--yes'], { env: { TOKENCTL_DB: '' } });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^Error: TOKENCTL_DB is set but empty: it names no store/);
    expect(r.stderr).toContain('leave TOKENCTL_DB unset for the default store');
  });

  it('an unknown scheme (mysql://) is refused with the kinds tokenctl knows, and no file is made of it', async () => {
    const r = await runCommand(['status', '--db', 'mysql://root@db/tokens']);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('Error: mysql:// is not a kind of store tokenctl knows\nHint: a store is a SQLite file path or a postgres:// (postgresql://) URL\n');
    expect(existsSync('mysql:')).toBe(false);
  });
});

describe('destructive commands name the store they acted on', () => {
  let store: TempStore;
  let client: string;
  beforeAll(async () => {
    store = tempStore({ inProcess: true });
    ({ id: client } = await createClient(store));
  });
  afterAll(() => store.cleanup());

  it('revoke --user: "Store: <path>" under the result, and store in --json', async () => {
    await issue(store, client, 'ann');
    await issue(store, client, 'bob');
    const text = await store.run(['revoke', '--user', 'ann', '--yes']);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(new RegExp(`^Revoked 2 tokens \\(user ann\\) in .*\\nStore: ${escape(store.db)}\\n$`));
    expect(await store.json(['revoke', '--user', 'bob', '--yes'])).toMatchObject({ revoked: 2, store: store.db });
  });

  it('revoke TOKEN', async () => {
    const { access_token } = await issue(store, client, 'cy');
    const r = await store.run(['revoke', access_token]);
    expect(r.stdout).toMatch(new RegExp(`^token_revoke_success  .*\\nStore: ${escape(store.db)}\\n$`));
    const { refresh_token } = await issue(store, client, 'cy');
    expect(await store.json(['revoke', refresh_token])).toEqual({ code: 'token_revoke_success', message: expect.any(String), store: store.db });
  });

  it('purge', async () => {
    const r = await store.run(['purge', '--yes']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`\\nStore: ${escape(store.db)}\\n$`));
    expect(await store.json(['purge', '--yes'])).toMatchObject({ store: store.db });
  });

  it('client rotate-secret and client delete', async () => {
    const { id } = await createClient(store);
    const rotated = await store.run(['client', 'rotate-secret', id, '--yes']);
    expect(rotated.stdout).toMatch(new RegExp(`store: +${escape(store.db)}`));
    expect(await store.json(['client', 'rotate-secret', id, '--yes'])).toMatchObject({ client_id: id, store: store.db });
    expect(await store.json(['client', 'delete', id, '--yes'])).toMatchObject({ deleted: true, store: store.db });
    const { id: other } = await createClient(store);
    expect((await store.run(['client', 'delete', other, '--yes'])).stdout).toMatch(new RegExp(`^Deleted client ${other} and 0 tokens\\.\\nStore: ${escape(store.db)}\\n$`));
  });

  it('receiver remove', async () => {
    await store.json(['receiver', 'add', 'api', '--poll', '--client', client]);
    const r = await store.run(['receiver', 'remove', 'api', '--yes']);
    expect(r.stdout).toMatch(new RegExp(`^Removed receiver api\\nStore: ${escape(store.db)}\\n$`));
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

