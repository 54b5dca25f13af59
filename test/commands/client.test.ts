import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, issue, tempStore, type TempStore } from '../helpers/cli.js';

const CLIENT_VIEW_KEYS = ['access_ttl_s', 'audience', 'client_id', 'created_at', 'grant_types', 'login_provider', 'name', 'org_id', 'redirect_uris', 'refresh_ttl_s', 'require_dpop', 'scope', 'secret_updated_at', 'type'];

describe('client commands', () => {
  let store: TempStore;
  beforeAll(() => {
    store = tempStore({ inProcess: true });
  });
  afterAll(() => store.cleanup());

  it('client create --json returns the client and its secret, once', async () => {
    const r = await store.json(['client', 'create', '--name', 'Web shop', '--scope', 'read write', '--org', 'acme', '--audience', 'api', '--access-ttl', '15m', '--refresh-ttl', '7d']);
    expect(Object.keys(r).sort()).toEqual([...CLIENT_VIEW_KEYS, 'client_secret'].sort());
    expect(r).toMatchObject({ name: 'Web shop', type: 'confidential', scope: 'read write', org_id: 'acme', audience: 'api', access_ttl_s: 900, refresh_ttl_s: 604_800 });
    expect(r.client_id).toMatch(/^web-shop-/);
    expect(typeof r.client_secret).toBe('string');
    expect(r.client_secret.length).toBeGreaterThanOrEqual(32);
  });

  it('client create without --json shows the id and the secret and says it will not be shown again', async () => {
    const r = await store.run(['client', 'create', '--name', 'human']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/client_id:\s+human-[0-9a-f]{8}/);
    expect(r.stdout).toMatch(/client_secret:\s+\S{32,}/);
    expect(r.stderr).toMatch(/shown once/);
    expect(r.stdout).not.toMatch(/shown once/); // hints go to stderr, stdout keeps the data
  });

  it('--require-dpop is stored, shown by client show, and undone by client update --no-require-dpop', async () => {
    const made = await store.json(['client', 'create', '--name', 'dpop-app', '--public', '--require-dpop']);
    expect(made).toMatchObject({ require_dpop: true });
    const shown = await store.run(['client', 'show', made.client_id]);
    expect(shown.stdout).toMatch(/requires DPoP:\s+yes/);
    expect(await store.json(['client', 'update', made.client_id, '--no-require-dpop'])).toMatchObject({ require_dpop: false });
    expect((await store.run(['client', 'show', made.client_id])).stdout).not.toMatch(/requires DPoP/);
    expect(await store.json(['client', 'update', made.client_id, '--require-dpop'])).toMatchObject({ require_dpop: true });
  });

  it('a public client has no secret, and --public with --secret is refused', async () => {
    const pub = await store.json(['client', 'create', '--name', 'mobile', '--public']);
    expect(pub).toMatchObject({ type: 'public', client_secret: null });
    const both = await store.run(['client', 'create', '--name', 'x', '--public', '--secret', 'a-long-enough-secret-value-123456']);
    expect(both.code).toBe(2);
  });

  it('refuses a bad duration and an invalid scope, writing nothing', async () => {
    const before = (await store.json<unknown[]>(['client', 'list'])).length;
    const ttl = await store.run(['client', 'create', '--name', 'bad', '--access-ttl', '10 parsecs']);
    expect(ttl.code).toBe(2);
    expect(ttl.stderr).toMatch(/--access-ttl: "10 parsecs" is not a duration/);
    const scope = await store.run(['client', 'create', '--name', 'bad', '--scope', 'a"b']);
    expect(scope.code).toBe(2);
    expect((await store.json<unknown[]>(['client', 'list'])).length).toBe(before);
  });

  it('client list and client show never show a secret', async () => {
    const { id, secret } = await createClient(store, ['--scope', 'read']);
    const tokens = await issue(store, id, 'alice');
    const list = await store.run(['client', 'list']);
    const listJson = await store.run(['client', 'list', '--json']);
    const show = await store.run(['client', 'show', id]);
    const showJson = await store.json(['client', 'show', id]);
    for (const out of [list.stdout, listJson.stdout, show.stdout, JSON.stringify(showJson)]) {
      expect(out).toContain(id);
      expect(out).not.toContain(secret!);
      expect(out).not.toContain(tokens.access_token);
      expect(out).not.toContain(tokens.refresh_token);
      expect(out).not.toMatch(/secret_hash|scrypt/);
    }
    expect(Object.keys(showJson).sort()).toEqual([...CLIENT_VIEW_KEYS, 'tokens'].sort());
    expect(showJson.tokens).toEqual({ total: 2, active: 2, expired: 0, revoked: 0 });
    expect(listJson.json<{ client_id: string }[]>().map((c) => c.client_id)).toContain(id);
  });

  it('client show of an unknown client exits 4', async () => {
    const r = await store.run(['client', 'show', 'no-such-client']);
    expect(r.code).toBe(4);
    expect(r.stderr).toMatch(/no client with id "no-such-client"/);
    expect(r.stdout).toBe('');
  });

  it('client delete shows what will go, refuses without a terminal, and deletes with --yes', async () => {
    const { id } = await createClient(store);
    await issue(store, id, 'bob');

    const dry = await store.json(['client', 'delete', id, '--dry-run']);
    expect(dry).toMatchObject({ client: { client_id: id }, tokens: 2, deleted: false, dry_run: true });

    const refused = await store.run(['client', 'delete', id]);
    expect(refused.code).toBe(5);
    expect(refused.stderr).toMatch(/Nothing deleted/);
    expect(refused.stderr).toMatch(/2 tokens/); // the plan is shown before the refusal
    expect((await store.run(['client', 'show', id])).code).toBe(0);

    const done = await store.json(['client', 'delete', id, '--yes']);
    expect(done).toMatchObject({ tokens: 2, deleted: true, dry_run: false });
    expect((await store.run(['client', 'show', id])).code).toBe(4);
    expect((await store.run(['client', 'delete', id, '--yes'])).code).toBe(4);
  });

  it('client rotate-secret refuses without --yes, then shows the new secret once; the old one stops working', async () => {
    const { id, secret } = await createClient(store);
    const t = await issue(store, id, 'carol');

    const refused = await store.run(['client', 'rotate-secret', id]);
    expect(refused.code).toBe(5);
    expect(refused.stderr).toMatch(/Secret not changed/);

    const rotated = await store.json(['client', 'rotate-secret', id, '--yes']);
    expect(Object.keys(rotated).sort()).toEqual(['client_id', 'client_secret', 'secret_updated_at', 'store']);
    expect(rotated.client_id).toBe(id);
    expect(rotated.client_secret).not.toBe(secret);

    const old = await store.run(['refresh', t.refresh_token, '--client-id', id, '--client-secret', secret!, '--json']);
    expect(old.code).toBe(2);
    expect(old.stderr).toMatch(/incorrect/);
    const fresh = await store.run(['refresh', t.refresh_token, '--client-id', id, '--client-secret', rotated.client_secret, '--json']);
    expect(fresh.code).toBe(0);
  });

  it('client rotate-secret of a public client is refused before asking', async () => {
    const { id } = await createClient(store, ['--public']);
    const r = await store.run(['client', 'rotate-secret', id]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/public/);
  });
});
