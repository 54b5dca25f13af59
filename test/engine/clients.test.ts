import { describe, expect, it } from 'vitest';
import { InvalidClientError, InvalidInputError, NotFoundError } from '../../src/engine/errors.js';
import { introspected, issueFor, makeEngine, refreshAs, START } from '../helpers/engine.js';

const VIEW_FIELDS = ['client_id', 'name', 'type', 'scope', 'org_id', 'audience', 'access_ttl_s', 'refresh_ttl_s', 'created_at', 'secret_updated_at', 'redirect_uris', 'grant_types', 'login_provider', 'require_dpop'];

describe('client create', () => {
  it('a confidential client: the secret is returned once, the view never holds it or its hash', async () => {
    const { engine } = makeEngine();
    const created = await engine.createClient({ name: 'Billing App', scope: 'read  write', orgId: 'org-9', audience: 'https://api' }, 'cli:op');
    const secret = created.client_secret;
    expect(secret).toMatch(/^tcs_[A-Za-z0-9_-]{43}$/);
    expect(created.client).toMatchObject({ name: 'Billing App', type: 'confidential', scope: 'read write', org_id: 'org-9', audience: 'https://api', created_at: START });
    expect(created.client.client_id).toMatch(/^billing-app-[0-9a-f]{8}$/);
    for (const view of [created.client, await engine.getClient(created.client.client_id), ...(await engine.listClients())]) {
      expect(Object.keys(view).sort()).toEqual([...VIEW_FIELDS].sort());
      expect(JSON.stringify(view)).not.toContain(secret!);
      expect(JSON.stringify(view)).not.toContain('scrypt');
    }
    const [entry] = await engine.audit({});
    expect(entry).toMatchObject({ action: 'client.create', target: `client:${created.client.client_id}`, detail: 'confidential; grants refresh_token' });
    expect(JSON.stringify(await engine.audit({}))).not.toContain(secret!);
  });

  it('stores only a salted hash of the secret', async () => {
    const { engine, store } = makeEngine();
    const a = await engine.createClient({ name: 'A', id: 'a', secret: 'same-secret-123' }, 'cli:op');
    const b = await engine.createClient({ name: 'B', id: 'b', secret: 'same-secret-123' }, 'cli:op');
    expect(a.client_secret).toBe('same-secret-123');
    const [ra, rb] = [await store.getClient('a'), await store.getClient('b')];
    expect(ra!.secretHash).toMatch(/^scrypt\$/);
    expect(ra!.secretHash).not.toContain('same-secret-123');
    expect(ra!.secretHash).not.toBe(rb!.secretHash);
    expect(b.client.type).toBe('confidential');
  });

  it('a public client has no secret', async () => {
    const { engine } = makeEngine();
    const created = await engine.createClient({ name: 'SPA', public: true }, 'cli:op');
    expect(created.client_secret).toBeNull();
    expect(created.client.type).toBe('public');
    await expect(engine.createClient({ name: 'SPA', public: true, secret: 'a-long-secret-1' }, 'cli:op')).rejects.toBeInstanceOf(InvalidInputError);
  });

  it.each([
    ['a short secret', { name: 'x', secret: 'short' }, /at least 12/],
    ['a secret with a control character', { name: 'x', secret: 'long-enough-\u0001-secret' }, /control/],
    ['an empty name', { name: '  ' }, /name/],
    ['a bad scope', { name: 'x', scope: 'read "all"' }, /scope/],
    ['a lifetime under 1 s', { name: 'x', accessTtlMs: 999 }, /at least 1s/],
    ['an id with a colon', { name: 'x', id: 'a:b' }, /client id/],
    ['an id with a space', { name: 'x', id: 'a b' }, /client id/],
    // '+' and '%' would decode differently in the spec's and RFC 6749's Basic headers.
    ['an id with a plus sign', { name: 'x', id: 'a+b' }, /client id/],
    ['an id with a percent sign', { name: 'x', id: 'a%41' }, /client id/],
  ])('refuses %s', async (_what, input, message) => {
    const { engine } = makeEngine();
    const error = await engine.createClient({ public: !('secret' in input), ...input }, 'cli:op').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as Error).message).toMatch(message);
    expect(await engine.listClients()).toEqual([]);
  });

  it('refuses a duplicate id', async () => {
    const { engine } = makeEngine();
    await engine.createClient({ name: 'x', id: 'dup', public: true }, 'cli:op');
    await expect(engine.createClient({ name: 'y', id: 'dup', public: true }, 'cli:op')).rejects.toThrow(/already exists/);
  });
});

describe('client rotate-secret', () => {
  it('returns a new secret once: the old one fails authentication, the new one passes', async () => {
    const { engine, clock } = makeEngine();
    const { client, client_secret: old } = await engine.createClient({ name: 'x', id: 'app' }, 'cli:op');
    await expect(engine.authenticate({ clientId: 'app', secrets: [old!] })).resolves.toMatchObject({ id: 'app' });
    clock.advance(1000);
    const rotated = await engine.rotateClientSecret('app', 'cli:op');
    expect(rotated.client_secret).not.toBe(old);
    expect(rotated.client.secret_updated_at).toBe(START + 1000);
    expect(rotated.client.created_at).toBe(client.created_at);
    expect(JSON.stringify(rotated.client)).not.toContain(rotated.client_secret!);
    await expect(engine.authenticate({ clientId: 'app', secrets: [old!] })).rejects.toBeInstanceOf(InvalidClientError);
    await expect(engine.authenticate({ clientId: 'app', secrets: [rotated.client_secret!] })).resolves.toMatchObject({ id: 'app' });
    expect((await engine.audit({}))[0]).toMatchObject({ action: 'client.rotate_secret', target: 'client:app' });
  });

  it('takes a chosen secret; refuses a public or unknown client', async () => {
    const { engine } = makeEngine();
    await engine.createClient({ name: 'x', id: 'app' }, 'cli:op');
    await engine.createClient({ name: 'p', id: 'pub', public: true }, 'cli:op');
    expect((await engine.rotateClientSecret('app', 'cli:op', 'chosen-secret-1')).client_secret).toBe('chosen-secret-1');
    await expect(engine.rotateClientSecret('pub', 'cli:op')).rejects.toBeInstanceOf(InvalidInputError);
    await expect(engine.rotateClientSecret('nope', 'cli:op')).rejects.toBeInstanceOf(NotFoundError);
    await expect(engine.rotateClientSecret('app', 'cli:op', 'short')).rejects.toBeInstanceOf(InvalidInputError);
  });
});

describe('client delete', () => {
  it('removes the client and every token issued to it, and no other client\'s', async () => {
    const { engine, store } = makeEngine();
    await engine.createClient({ name: 'x', id: 'app', public: true }, 'cli:op');
    await engine.createClient({ name: 'y', id: 'web', public: true }, 'cli:op');
    const app = (await store.getClient('app'))!;
    const web = (await store.getClient('web'))!;
    const issued = await issueFor(engine, app);
    const kept = await issueFor(engine, web);
    const deleted = await engine.deleteClient('app', 'cli:op');
    expect(deleted.client_id).toBe('app');
    await expect(engine.getClient('app')).rejects.toBeInstanceOf(NotFoundError);
    expect(await introspected(engine, issued.access_token)).toEqual({ active: false });
    expect(await introspected(engine, issued.refresh_token)).toEqual({ active: false });
    expect((await engine.listTokens({})).filter((t) => t.client_id === 'app')).toEqual([]);
    // Gone with its tokens: listing by its id says there is no such client, as for a mistyped id.
    await expect(engine.listTokens({ clientId: 'app' })).rejects.toBeInstanceOf(NotFoundError);
    expect(await introspected(engine, kept.access_token)).toMatchObject({ active: true });
    // Its refresh token is gone, and so is the client: it can no longer authenticate to present one.
    await expect(refreshAs(engine, { client: app, refreshToken: issued.refresh_token })).rejects.toMatchObject({ code: 'invalid_client', reason: 'unknown_client' });
    await expect(engine.authenticate({ clientId: 'app', secrets: [] })).rejects.toBeInstanceOf(InvalidClientError);
    expect((await engine.audit({}))[0]).toMatchObject({ action: 'client.delete', target: 'client:app' });
    await expect(engine.deleteClient('app', 'cli:op')).rejects.toBeInstanceOf(NotFoundError);
  });
});

describe('issue', () => {
  it('refuses a scope beyond the client\'s, a malformed scope, an empty user or an unknown client', async () => {
    const { engine } = makeEngine();
    await engine.createClient({ name: 'x', id: 'app', public: true, scope: 'read' }, 'cli:op');
    await expect(engine.issue({ clientId: 'app', username: 'u', scope: 'write' })).rejects.toBeInstanceOf(InvalidInputError);
    await expect(engine.issue({ clientId: 'app', username: 'u', scope: 'r"' })).rejects.toBeInstanceOf(InvalidInputError);
    await expect(engine.issue({ clientId: 'app', username: ' ' })).rejects.toBeInstanceOf(InvalidInputError);
    await expect(engine.issue({ clientId: 'nope', username: 'u' })).rejects.toBeInstanceOf(NotFoundError);
    expect(await engine.listTokens({})).toEqual([]);
  });
});
