import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, issue, tempStore, type TempStore } from '../helpers/cli.js';

describe('revoke', () => {
  let store: TempStore;
  let web: { id: string; secret: string | null };
  let api: { id: string; secret: string | null };

  beforeAll(async () => {
    store = tempStore({ inProcess: true });
    [web, api] = await Promise.all([createClient(store), createClient(store)]);
  });
  afterAll(() => store.cleanup());

  const activeOf = async (args: string[]) => (await store.json<{ tokens: unknown[] }>(['token', 'list', '--state', 'active', ...args])).tokens.length;

  it('revokes one token and prints the spec 2.2 result; a second time says already revoked', async () => {
    const t = await issue(store, web.id, 'alice');
    const first = await store.json(['revoke', t.access_token, '--hint', 'access_token']);
    expect(first).toEqual({ code: 'token_revoke_success', message: expect.stringContaining(t.jti), store: store.db });
    expect(first.message).toMatch(/access_token/);
    const again = await store.run(['revoke', t.access_token]);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/^token_already_revoked\s+The access_token .* was already revoked$/m);
    expect(again.stdout).not.toContain(t.access_token);
  });

  it('revoking a refresh token ends the access tokens of its grant', async () => {
    const t = await issue(store, web.id, 'bob');
    expect(await store.json(['revoke', t.refresh_token])).toMatchObject({ code: 'token_revoke_success' });
    const introspected = await store.run(['introspect', t.access_token, '--json']);
    expect(introspected.code).toBe(3);
    expect(introspected.json()).toEqual({ active: false });
  });

  it('refuses a malformed token (2), an unknown token (4), and a TOKEN given with a bulk flag (2)', async () => {
    const [malformed, unknown, both, none, dry] = await Promise.all([
      store.run(['revoke', 'hello']),
      store.run(['revoke', 'tca_' + 'B'.repeat(43)]),
      store.run(['revoke', 'tca_' + 'B'.repeat(43), '--user', 'alice']),
      store.run(['revoke']),
      store.run(['revoke', 'tca_' + 'B'.repeat(43), '--dry-run']),
    ]);
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toMatch(/not a tokenctl token/);
    expect(unknown.code).toBe(4);
    expect(unknown.stderr).toMatch(/no such token/);
    expect(both.code).toBe(2);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/exactly one of/);
    expect(dry.code).toBe(2);
  });

  it('bulk revocation without --yes and without a terminal refuses with exit 5 and changes nothing', async () => {
    await Promise.all([issue(store, web.id, 'carol'), issue(store, api.id, 'carol')]);
    expect(await activeOf(['--user', 'carol'])).toBe(4);
    const refused = await store.run(['revoke', '--user', 'carol']);
    expect(refused.code).toBe(5);
    expect(refused.stderr).toMatch(/Nothing revoked/);
    expect(refused.stderr).toMatch(/--yes/);
    expect(refused.stdout).toBe('');
    const refusedJson = await store.run(['revoke', '--user', 'carol', '--json']);
    expect(refusedJson.code).toBe(5);
    expect(refusedJson.stdout).toBe('');
    expect(JSON.parse(refusedJson.stderr).error.code).toBe('not_confirmed');
    expect(await activeOf(['--user', 'carol'])).toBe(4);
  });

  it('--dry-run shows the count and changes nothing', async () => {
    const dry = await store.json(['revoke', '--user', 'carol', '--dry-run']);
    expect(dry).toEqual({ selector: 'user carol', store: store.db, matched: 4, revoked: 0, elapsed_ms: 0, dry_run: true });
    const human = await store.run(['revoke', '--client', web.id, '--dry-run']);
    expect(human.stdout).toMatch(/would be revoked/);
    expect(await activeOf(['--user', 'carol'])).toBe(4);
  });

  it('--user with --client revokes only that client’s tokens of the user, with a summary', async () => {
    const r = await store.json(['revoke', '--user', 'carol', '--client', web.id, '--yes']);
    expect(r).toMatchObject({ selector: `user carol of client ${web.id}`, matched: 2, revoked: 2, dry_run: false });
    expect(typeof r.elapsed_ms).toBe('number');
    expect(await activeOf(['--user', 'carol', '--client', api.id])).toBe(2);
    expect(await activeOf(['--user', 'carol', '--client', web.id])).toBe(0);
  });

  it('--client and --jti revoke in bulk; the human summary says how many and how long', async () => {
    const t = await issue(store, api.id, 'dora');
    const byJti = await store.run(['revoke', '--jti', t.jti, '--yes']);
    expect(byJti.code).toBe(0);
    expect(byJti.stdout).toMatch(/^Revoked 1 token \(jti [0-9a-f-]{36}\) in \d+ ms\.$/m);
    const byClient = await store.json(['revoke', '--client', api.id, '--yes']);
    expect(byClient.revoked).toBeGreaterThanOrEqual(3);
    expect(await activeOf(['--client', api.id])).toBe(0);
    const nothing = await store.run(['revoke', '--client', api.id]); // nothing to revoke: no question asked
    expect(nothing.code).toBe(0);
    expect(nothing.stdout).toMatch(/nothing to revoke/);
  });

  it('bulk revocation of an unknown client or jti exits 4', async () => {
    const [client, jti, both] = await Promise.all([
      store.run(['revoke', '--client', 'ghost', '--yes']),
      store.run(['revoke', '--jti', '00000000-0000-4000-8000-000000000000', '--yes']),
      store.run(['revoke', '--jti', 'x', '--client', 'y']),
    ]);
    expect(client.code).toBe(4);
    expect(jti.code).toBe(4);
    expect(both.code).toBe(2);
  });
});
