import { describe, expect, it } from 'vitest';
import { addClient, introspected, issueFor, makeEngine, mustRecordOf, refreshAs, revokeAs, SECOND, START, UUID } from '../helpers/engine.js';

/** Spec 2.1 (token response), 2.2 (revocation result), 2.3 (introspection result). */
describe('spec 2.1: token response of a refresh', () => {
  async function refreshed(options: { accessTtlMs?: number } = {}) {
    const env = makeEngine({ node: 'node-7' });
    const client = await addClient(env.store, { orgId: 'org-42', accessTtlMs: options.accessTtlMs ?? null });
    const issued = await issueFor(env.engine, client, { scope: 'read write' });
    env.clock.advance(10 * SECOND + 321);
    const response = await refreshAs(env.engine, { client, refreshToken: issued.refresh_token });
    return { ...env, client, issued, response };
  }

  it('has exactly the nine fields, with their types', async () => {
    const { response } = await refreshed();
    expect(Object.keys(response).sort()).toEqual(
      ['access_token', 'expires_in', 'jti', 'node', 'org_id', 'refresh_token', 'scope', 'stime', 'token_type'].sort(),
    );
    for (const key of ['access_token', 'jti', 'node', 'org_id', 'refresh_token', 'scope', 'token_type'] as const) {
      expect(typeof response[key]).toBe('string');
    }
    expect(Number.isInteger(response.expires_in)).toBe(true);
    expect(Number.isInteger(response.stime)).toBe(true);
  });

  it('jti is the new access token\'s jti, in UUID form', async () => {
    const { engine, store, response } = await refreshed();
    expect(response.jti).toMatch(UUID);
    const record = await mustRecordOf(store, response.access_token);
    expect(record.type).toBe('access_token');
    expect(record.jti).toBe(response.jti);
    expect(await introspected(engine, response.access_token)).toMatchObject({ jti: response.jti });
  });

  it('stime is the issue time in milliseconds; expires_in the lifetime in seconds', async () => {
    const { response } = await refreshed();
    expect(response.stime).toBe(START + 10 * SECOND + 321);
    expect(response.expires_in).toBe(3600);
  });

  it('expires_in follows a per-client access lifetime', async () => {
    const { response } = await refreshed({ accessTtlMs: 90 * SECOND });
    expect(response.expires_in).toBe(90);
  });

  it("token_type is 'bearer', node is this engine's node, org_id the client's organisation, scope the grant's", async () => {
    const { response } = await refreshed();
    expect(response.token_type).toBe('bearer');
    expect(response.node).toBe('node-7');
    expect(response.org_id).toBe('org-42');
    expect(response.scope).toBe('read write');
  });
});

describe('spec 2.2: revocation result', () => {
  it.each(['access_token', 'refresh_token'] as const)('a %s: token_revoke_success naming the type and the jti', async (type) => {
    const { engine, store } = makeEngine();
    const client = await addClient(store);
    const issued = await issueFor(engine, client);
    const token = type === 'access_token' ? issued.access_token : issued.refresh_token;
    const { jti } = await mustRecordOf(store, token);
    const { result, jti: revoked } = await revokeAs(engine, { client, token });
    expect(Object.keys(result).sort()).toEqual(['code', 'message']);
    expect(revoked).toBe(jti);
    expect(result.code).toBe('token_revoke_success');
    expect(result.message).toContain(type);
    expect(result.message).toContain(jti);
    const { result: again } = await revokeAs(engine, { client, token });
    expect(again.code).toBe('token_already_revoked');
    expect(typeof again.message).toBe('string');
  });
});

describe('spec 2.3: introspection result of an active token', () => {
  const FIELDS = ['active', 'scope', 'client_id', 'username', 'token_type', 'exp', 'iat', 'nbf', 'sub', 'aud', 'iss', 'jti'];

  async function setup() {
    const env = makeEngine({ issuer: 'https://issuer.example.test/' });
    const client = await addClient(env.store, { id: 'web', audience: 'https://api.example.test/v1' });
    const issued = await issueFor(env.engine, client, { username: 'alice', sub: 'user-0001', scope: 'read' });
    return { ...env, client, issued };
  }

  it.each(['access_token', 'refresh_token'] as const)('a %s: all twelve fields, times in whole seconds', async (type) => {
    const { engine, store, issued } = await setup();
    const token = type === 'access_token' ? issued.access_token : issued.refresh_token;
    const record = await mustRecordOf(store, token);
    const result = await introspected(engine, token);
    expect(Object.keys(result).sort()).toEqual([...FIELDS].sort());
    expect(result).toEqual({
      active: true,
      scope: 'read',
      client_id: 'web',
      username: 'alice',
      token_type: type,
      exp: Math.floor(record.expiresAt / 1000),
      iat: Math.floor(START / 1000),
      nbf: Math.floor(START / 1000),
      sub: 'user-0001',
      aud: 'https://api.example.test/v1',
      iss: 'https://issuer.example.test/',
      jti: record.jti,
    });
    expect(result.active && result.jti).toMatch(UUID);
    if (result.active) {
      for (const t of [result.exp, result.iat, result.nbf]) expect(Number.isInteger(t)).toBe(true);
      expect(result.iat).toBeLessThan(START); // seconds, not milliseconds (START is not on a whole second)
      expect(result.exp - result.iat).toBe(type === 'access_token' ? 3600 : 30 * 86400);
    }
  });

  it('sub defaults to the user name', async () => {
    const { engine, store } = makeEngine();
    const client = await addClient(store);
    const issued = await issueFor(engine, client, { username: 'bob' });
    expect(await introspected(engine, issued.access_token)).toMatchObject({ username: 'bob', sub: 'bob' });
  });
});
