import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, issue, tempStore, type TempStore } from '../helpers/cli.js';

/** A user or client that never had a token is not one whose tokens are all revoked: a typo shows. */
describe('bulk revocation of nobody', () => {
  let store: TempStore;
  let clientId: string;
  let idle: string;
  beforeAll(async () => {
    store = tempStore({ inProcess: true });
    clientId = (await createClient(store)).id;
    idle = (await createClient(store)).id;
    await issue(store, clientId, 'alice');
    await store.json(['revoke', '--user', 'alice', '--yes']);
  });
  afterAll(() => store.cleanup());

  it('a user name with no tokens at all (a typo): exit 4, saying so and naming the store', async () => {
    const r = await store.run(['revoke', '--user', 'alcie', '--yes']);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain(`user alcie has no tokens in ${store.db}`);
    expect(r.stderr).toMatch(/check the spelling/);
  });

  it('a user whose tokens are all revoked: exit 0, nothing to revoke', async () => {
    const r = await store.run(['revoke', '--user', 'alice', '--yes']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/No active tokens \(user alice\): all are revoked or expired; nothing to revoke/);
  });

  it('a client that exists but never had a token: exit 4; one whose tokens are all revoked: exit 0', async () => {
    const [never, revoked] = await Promise.all([store.run(['revoke', '--client', idle, '--yes', '--json']), store.run(['revoke', '--client', clientId, '--yes', '--json'])]);
    expect(never.code).toBe(4);
    expect(JSON.parse(never.stderr).error.code).toBe('no_tokens');
    expect(revoked.code).toBe(0);
    expect(revoked.json()).toMatchObject({ matched: 0, revoked: 0 });
  });
});
