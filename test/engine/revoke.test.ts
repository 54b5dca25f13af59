import { describe, expect, it } from 'vitest';
import { NotFoundError, PartialBulkRevocationError } from '../../src/engine/errors.js';
import { addClient, credentialsOf, DAY, HOUR, introspected, issueFor, makeEngine, mustRecordOf, refreshAs, revokeAs } from '../helpers/engine.js';

/** Contract 3: revocation decisions beyond the spec's table. */
describe('revocation by a client (contract 3)', () => {
  async function setup() {
    const env = makeEngine();
    const client = await addClient(env.store, { id: 'app' });
    const other = await addClient(env.store, { id: 'other' });
    const issued = await issueFor(env.engine, client);
    return { ...env, client, other, issued };
  }

  it("revoking a refresh token revokes every access token of its grant, and no other grant's", async () => {
    const { engine, clock, client, issued } = await setup();
    clock.advance(HOUR / 2);
    const second = await refreshAs(engine, { client, refreshToken: issued.refresh_token });
    const otherGrant = await issueFor(engine, client);
    const { result } = await revokeAs(engine, { client, token: issued.refresh_token });
    expect(result.code).toBe('token_revoke_success');
    for (const token of [issued.refresh_token, issued.access_token, second.access_token]) {
      expect(await introspected(engine, token)).toEqual({ active: false });
    }
    expect(await introspected(engine, otherGrant.access_token)).toMatchObject({ active: true });
    expect(await introspected(engine, otherGrant.refresh_token)).toMatchObject({ active: true });
  });

  it('revoking an access token leaves its refresh token and sibling access tokens active', async () => {
    const { engine, client, issued } = await setup();
    const second = await refreshAs(engine, { client, refreshToken: issued.refresh_token });
    expect((await revokeAs(engine, { client, token: issued.access_token })).result.code).toBe('token_revoke_success');
    expect(await introspected(engine, issued.refresh_token)).toMatchObject({ active: true });
    expect(await introspected(engine, second.access_token)).toMatchObject({ active: true });
  });

  it('the type hint is not needed: either token is found (RFC 7009 §2.1)', async () => {
    const { engine, client, issued } = await setup();
    expect((await revokeAs(engine, { client, token: issued.access_token })).result.code).toBe('token_revoke_success');
    expect((await revokeAs(engine, { client, token: issued.refresh_token })).result.code).toBe('token_revoke_success');
  });

  it("another client's token: token_invalid, nothing changes, nothing about it is revealed", async () => {
    const { engine, store, other, issued } = await setup();
    const before = await mustRecordOf(store, issued.refresh_token);
    const { result, jti } = await revokeAs(engine, { client: other, token: issued.refresh_token });
    expect(result.code).toBe('token_invalid');
    expect(jti).toBeNull();
    expect(result.message).not.toContain(before.jti);
    expect(result.message).not.toContain('app');
    expect(await mustRecordOf(store, issued.refresh_token)).toEqual(before);
    expect(await introspected(engine, issued.access_token)).toMatchObject({ active: true });
    expect(await engine.audit({})).toEqual([]);
  });

  it('an unknown or malformed token: token_invalid, with the same message as another client\'s token', async () => {
    const { engine, other, client, issued } = await setup();
    const foreign = await revokeAs(engine, { client: other, token: issued.access_token });
    const unknown = await revokeAs(engine, { client, token: 'tcr_' + 'x'.repeat(43) });
    const malformed = await revokeAs(engine, { client, token: 'garbage' });
    expect(unknown).toEqual({ ...foreign, clientId: 'app' });
    expect(malformed).toEqual({ ...foreign, clientId: 'app' });
    expect(unknown).toEqual({ result: { code: 'token_invalid', message: expect.any(String) }, clientId: 'app', jti: null, done: { kind: 'revoke_noop' } });
  });

  it('an expired token: token_invalid, and it stays unrevoked', async () => {
    const { engine, store, clock, client, issued } = await setup();
    clock.advance(HOUR);
    const { result, jti } = await revokeAs(engine, { client, token: issued.access_token });
    expect(result.code).toBe('token_invalid');
    expect(jti).toBeNull();
    expect((await mustRecordOf(store, issued.access_token)).revokedAt).toBeNull();
    expect(await engine.audit({})).toEqual([]);
  });

  it('hands over the client, the jti it acted on and what it did beside the spec 2.2 record, which stays code and message only', async () => {
    const { engine, store, client, issued } = await setup();
    const refresh = await mustRecordOf(store, issued.refresh_token);
    const access = await revokeAs(engine, { client, token: issued.access_token });
    const success = { code: 'token_revoke_success', message: expect.any(String) };
    expect(access).toEqual({ result: success, clientId: 'app', jti: issued.jti, done: { kind: 'revoked', grant: false } });
    const grant = await revokeAs(engine, { client, token: issued.refresh_token });
    expect(grant).toEqual({ result: success, clientId: 'app', jti: refresh.jti, done: { kind: 'revoked', grant: true } });
    const again = await revokeAs(engine, { client, token: issued.access_token });
    expect(again).toEqual({ result: { code: 'token_already_revoked', message: expect.any(String) }, clientId: 'app', jti: issued.jti, done: { kind: 'revoke_noop' } });
    for (const r of [access, grant, again]) expect(Object.keys(r.result).sort()).toEqual(['code', 'message']);
  });

  it('a successful revocation is audited with the client as actor and the jti as target', async () => {
    const { engine, client, issued } = await setup();
    await revokeAs(engine, { client, token: issued.access_token });
    await revokeAs(engine, { client, token: issued.access_token }); // already revoked: no second entry
    const entries = await engine.audit({});
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ actor: 'app', action: 'token.revoke', target: `${issued.jti} client:app`, count: 1 });
    expect(await engine.audit({ jti: issued.jti })).toHaveLength(1);
    expect(await engine.audit({ clientId: 'app' })).toHaveLength(1);
    expect(await engine.audit({ clientId: 'ap' })).toHaveLength(0);
  });
});

describe('revocation by an operator', () => {
  it("revokes any client's token; an unknown token is NotFoundError", async () => {
    const { engine, store } = makeEngine();
    const client = await addClient(store);
    const issued = await issueFor(engine, client);
    const result = await engine.revokeAsOperator(issued.refresh_token, 'cli:root');
    expect(result.code).toBe('token_revoke_success');
    expect(await introspected(engine, issued.access_token)).toEqual({ active: false });
    await expect(engine.revokeAsOperator('tca_' + 'A'.repeat(43), 'cli:root')).rejects.toBeInstanceOf(NotFoundError);
  });
});

describe('bulk revocation', () => {
  async function population() {
    const env = makeEngine();
    const app = await addClient(env.store, { id: 'app' });
    const web = await addClient(env.store, { id: 'web' });
    const aliceApp = await issueFor(env.engine, app, { username: 'alice' }); // 2 tokens
    const aliceApp2 = await refreshAs(env.engine, { client: app, refreshToken: aliceApp.refresh_token }); // +1 access
    const aliceWeb = await issueFor(env.engine, web, { username: 'alice' }); // 2 tokens
    const bobApp = await issueFor(env.engine, app, { username: 'bob' }); // 2 tokens
    return { ...env, app, web, aliceApp, aliceApp2, aliceWeb, bobApp };
  }

  async function active(engine: Awaited<ReturnType<typeof population>>['engine'], tokens: string[]): Promise<boolean[]> {
    return Promise.all(tokens.map(async (t) => (await introspected(engine, t)).active));
  }

  it('by jti of an access token: just that token', async () => {
    const { engine, aliceApp } = await population();
    expect(await engine.countBulk({ jti: aliceApp.jti })).toBe(1);
    expect((await engine.revokeBulk({ jti: aliceApp.jti }, 'cli:op')).revoked).toBe(1);
    expect(await active(engine, [aliceApp.access_token, aliceApp.refresh_token])).toEqual([false, true]);
    const [entry] = await engine.audit({});
    expect(entry).toMatchObject({ actor: 'cli:op', action: 'token.revoke_bulk', target: aliceApp.jti, count: 1 });
  });

  it('by jti of a refresh token: the token and its grant\'s access tokens', async () => {
    const { engine, store, aliceApp, aliceApp2, bobApp } = await population();
    const { jti } = await mustRecordOf(store, aliceApp.refresh_token);
    expect((await engine.revokeBulk({ jti }, 'cli:op')).revoked).toBe(3);
    expect(await active(engine, [aliceApp.refresh_token, aliceApp.access_token, aliceApp2.access_token, bobApp.access_token])).toEqual([false, false, false, true]);
  });

  it('by user: every grant of the user, of every client', async () => {
    const { engine, aliceApp, aliceWeb, bobApp } = await population();
    expect(await engine.countBulk({ username: 'alice' })).toBe(5);
    expect((await engine.revokeBulk({ username: 'alice' }, 'cli:op')).revoked).toBe(5);
    expect(await active(engine, [aliceApp.refresh_token, aliceWeb.refresh_token, aliceWeb.access_token, bobApp.refresh_token])).toEqual([false, false, false, true]);
    expect(await engine.countBulk({ username: 'alice' })).toBe(0);
    expect((await engine.audit({}))[0]).toMatchObject({ action: 'token.revoke_bulk', target: 'user:alice', count: 5 });
  });

  it('by user and client: only that client\'s grants of the user', async () => {
    const { engine, aliceApp, aliceWeb, bobApp } = await population();
    expect((await engine.revokeBulk({ username: 'alice', clientId: 'web' }, 'cli:op')).revoked).toBe(2);
    expect(await active(engine, [aliceWeb.refresh_token, aliceWeb.access_token, aliceApp.refresh_token, bobApp.refresh_token])).toEqual([false, false, true, true]);
    expect((await engine.audit({}))[0]).toMatchObject({ target: 'user:alice client:web', count: 2 });
  });

  it('by client: every token of the client, and a second run revokes nothing', async () => {
    const { engine, aliceApp, aliceWeb, bobApp } = await population();
    expect(await engine.countBulk({ clientId: 'app' })).toBe(5);
    expect((await engine.revokeBulk({ clientId: 'app' }, 'cli:op')).revoked).toBe(5);
    expect(await active(engine, [aliceApp.refresh_token, bobApp.access_token, aliceWeb.refresh_token])).toEqual([false, false, true]);
    expect((await engine.revokeBulk({ clientId: 'app' }, 'cli:op')).revoked).toBe(0);
    const entries = await engine.audit({});
    // Newest first: the second run's summary, then the first run's summary and its one batch.
    expect(entries.map((e) => [e.action, e.count])).toEqual([['token.revoke_bulk', 0], ['token.revoke_bulk', 5], ['token.revoke_bulk.batch', 5]]);
    expect(entries[1]).toMatchObject({ target: 'client:app', detail: 'client app: 1 batch' });
  });

  it('reports its running total after each batch that revoked something, for a progress bar', async () => {
    const { engine } = await population();
    const progress: number[] = [];
    const done = await engine.revokeBulk({ username: 'alice' }, 'cli:op', { batchSize: 2, onProgress: (n) => progress.push(n) });
    expect(done.revoked).toBe(5);
    expect(progress.length).toBeGreaterThan(1);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(progress.at(-1)).toBe(5);
  });

  it('in the audit trail: one line for the revocation with its total, after one line per batch', async () => {
    const { engine } = await population();
    await engine.revokeBulk({ username: 'alice' }, 'cli:op', { batchSize: 2 });
    const [summary, ...batches] = await engine.audit({});
    expect(summary).toMatchObject({ action: 'token.revoke_bulk', target: 'user:alice', count: 5, detail: `user alice: ${batches.length} batches` });
    expect(batches.length).toBeGreaterThan(1);
    expect(batches.every((b) => b.action === 'token.revoke_bulk.batch' && b.count > 0)).toBe(true);
    expect(batches.reduce((n, b) => n + b.count, 0)).toBe(5);
    const page = await engine.auditPage({});
    expect(page).toEqual({ entries: [summary], total: 1 });
    expect((await engine.auditPage({ batches: true })).total).toBe(1 + batches.length);
  });

  it('skips expired tokens', async () => {
    const { engine, clock } = await population();
    clock.advance(2 * HOUR); // access tokens expired, refresh tokens active
    expect(await engine.countBulk({ clientId: 'app' })).toBe(2);
    clock.advance(31 * DAY);
    expect(await engine.countBulk({ clientId: 'app' })).toBe(0);
  });

  it('an unknown jti or client is NotFoundError and is not audited', async () => {
    const { engine } = await population();
    await expect(engine.revokeBulk({ jti: '00000000-0000-4000-8000-000000000000' }, 'cli:op')).rejects.toBeInstanceOf(NotFoundError);
    await expect(engine.revokeBulk({ clientId: 'nope' }, 'cli:op')).rejects.toBeInstanceOf(NotFoundError);
    await expect(engine.countBulk({ username: 'alice', clientId: 'nope' })).rejects.toBeInstanceOf(NotFoundError);
    expect(await engine.audit({})).toEqual([]);
  });

  it('an unknown user revokes nothing, without error', async () => {
    const { engine } = await population();
    expect(await engine.countBulk({ username: 'carol' })).toBe(0);
    expect((await engine.revokeBulk({ username: 'carol' }, 'cli:op')).revoked).toBe(0);
    expect((await engine.countBulk({ username: 'alice' }))).toBe(5);
  });
});

describe('revocations that end a rotated grant (contract 3, revised 2026-11)', () => {
  async function rotated() {
    const env = makeEngine({ rotateRefreshTokens: true });
    const client = await addClient(env.store, { id: 'app' });
    const rt1 = await issueFor(env.engine, client);
    const rt2 = await refreshAs(env.engine, { client, refreshToken: rt1.refresh_token });
    return { ...env, client, rt1, rt2 };
  }

  it('revoking a replaced refresh token answers token_already_revoked and still ends the whole grant', async () => {
    const { engine, client, rt1, rt2 } = await rotated();
    const { result } = await revokeAs(engine, { client, token: rt1.refresh_token });
    expect(result.code).toBe('token_already_revoked');
    for (const token of [rt2.refresh_token, rt2.access_token, rt1.access_token]) expect(await introspected(engine, token)).toEqual({ active: false });
    const [entry] = await engine.audit({});
    expect(entry).toMatchObject({ action: 'token.revoke_grant', count: 4 }); // RT1 (replaced, not yet revoked), RT2 and both access tokens
  });

  it('the operator revoking a replaced refresh token from the CLI ends the grant too', async () => {
    const { engine, rt1, rt2 } = await rotated();
    expect((await engine.revokeAsOperator(rt1.refresh_token, 'cli:op')).code).toBe('token_already_revoked');
    expect(await introspected(engine, rt2.refresh_token)).toEqual({ active: false });
  });

  it('revoking a plainly revoked refresh token again writes nothing', async () => {
    const { engine, client, rt2 } = await rotated();
    expect((await revokeAs(engine, { client, token: rt2.refresh_token })).result.code).toBe('token_revoke_success');
    const before = (await engine.audit({})).length;
    expect((await revokeAs(engine, { client, token: rt2.refresh_token })).result.code).toBe('token_already_revoked');
    expect(await engine.audit({})).toHaveLength(before);
  });
});

describe('bulk revocation in batches', () => {
  async function many(n: number) {
    const env = makeEngine();
    const client = await addClient(env.store, { id: 'app' });
    for (let i = 0; i < n; i++) await issueFor(env.engine, client, { username: 'mass' });
    return { ...env, client };
  }

  it('an aborted signal stops it at a batch boundary, and says it was interrupted and how many were revoked', async () => {
    const { engine } = await many(3);
    const controller = new AbortController();
    controller.abort();
    const result = await engine.revokeBulk({ username: 'mass' }, 'cli:op', { signal: controller.signal });
    expect(result).toMatchObject({ revoked: 0, interrupted: true });
    expect(await engine.countBulk({ username: 'mass' })).toBe(6);
    expect((await engine.audit({}))[0]).toMatchObject({ action: 'token.revoke_bulk', count: 0, detail: expect.stringContaining('interrupted') });
    expect(await engine.revokeBulk({ username: 'mass' }, 'cli:op')).toMatchObject({ revoked: 6, interrupted: false });
  });

  it('a store failure after some batches is a PartialBulkRevocationError that says how many were revoked', async () => {
    const { engine, store } = await many(2);
    const real = store.revokeBulk.bind(store);
    let calls = 0;
    store.revokeBulk = async (selector, at, _limit, resume, trail) => {
      if (++calls > 1) throw new Error('the disk went away');
      return real(selector, at, 1, resume, trail); // one token a batch
    };
    const error = await engine.revokeBulk({ username: 'mass' }, 'cli:op').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PartialBulkRevocationError);
    expect(error).toMatchObject({ revoked: 1, message: expect.stringMatching(/after 1 token\(s\) were revoked/) });
  });
});

describe('introspection by a public client (contract 3, revised 2026-11)', () => {
  it('a public client sees its own tokens; any other token is inactive to it, while a confidential client sees every token', async () => {
    const { engine, store } = makeEngine();
    const pub = await addClient(store, { id: 'mobile', secretHash: null });
    const rs = await engine.createClient({ id: 'resource-server', name: 'RS', scope: 'read', orgId: 'org-1', audience: 'https://api.example.test' }, 'test');
    const own = await issueFor(engine, pub);
    const others = await engine.issue({ clientId: 'resource-server', username: 'alice' });
    const asPublic = async (token: string) => (await engine.introspectAsClient({ credentials: credentialsOf(pub), token })).result;
    const asConfidential = async (token: string) => (await engine.introspectAsClient({ credentials: credentialsOf({ id: 'resource-server' }, rs.client_secret!), token })).result;
    expect(await asPublic(own.access_token)).toMatchObject({ active: true, client_id: 'mobile' });
    expect(await asPublic(others.access_token)).toStrictEqual({ active: false });
    expect(await asConfidential(own.access_token)).toMatchObject({ active: true, client_id: 'mobile' });
  });
});
