import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createClient,
  DOORS,
  DAY,
  formAuth,
  HOUR,
  issue,
  specBasic,
  START,
  startTestServer,
  type Client,
  type TestServer,
} from '../helpers/server.js';

/**
 * Spec part 3, row by row, over HTTP only: each transition is triggered through an endpoint and
 * its next state observed through /oauth/introspection. Both authentication scenarios.
 */
describe.each(
  DOORS.flatMap((door) => [
    ['scenario I (confidential client)', false, door] as const,
    ['scenario II (public client)', true, door] as const,
  ]),
)('spec part 3 state table, %s, through the %s', (_name, isPublic, door) => {
  let s: TestServer;
  let client: Client;

  beforeAll(async () => {
    s = await startTestServer({ door });
    client = await createClient(s.engine, 'app', { public: isPublic });
  });
  afterAll(() => s?.close());

  const refresh = (token: string) => s.post('/oauth/token', { grant_type: 'refresh_token', refresh_token: token }, { authorization: specBasic(client) });
  const revoke = (token: string, hint: string) => s.post('/oauth/revocation', { token, token_type_hint: hint, ...formAuth(client) });
  const introspect = async (token: string, hint: string) =>
    (await s.post('/oauth/introspection', { token, token_type_hint: hint, ...formAuth(client) })).json;

  it('row 1: active → (validity period ends) → expired; refresh with it is 401 invalid_token', async () => {
    const issued = await issue(s.engine, client, { accessTtlMs: HOUR, refreshTtlMs: DAY });
    expect((await introspect(issued.refresh_token, 'refresh_token')).active).toBe(true);
    s.clock.advance(DAY);
    try {
      expect(await introspect(issued.refresh_token, 'refresh_token')).toEqual({ active: false });
      expect(await introspect(issued.access_token, 'access_token')).toEqual({ active: false });
      const r = await refresh(issued.refresh_token);
      expect(r.status).toBe(401);
      expect(r.json.error).toBe('invalid_token');
      expect(r.json.error_description).toMatch(/expired/);
    } finally {
      s.clock.set(START);
    }
  });

  it.each(['access_token', 'refresh_token'] as const)('row 2: active %s → POST /oauth/revocation → revoked, token_revoke_success', async (type) => {
    const issued = await issue(s.engine, client);
    const token = issued[type];
    const r = await revoke(token, type);
    expect(r.status).toBe(200);
    expect(r.json.code).toBe('token_revoke_success');
    expect(await introspect(token, type)).toEqual({ active: false });
  });

  it.each(['access_token', 'refresh_token'] as const)('row 3: revoked %s → POST /oauth/revocation again → revoked, token_already_revoked', async (type) => {
    const issued = await issue(s.engine, client);
    const token = issued[type];
    await revoke(token, type);
    const again = await revoke(token, type);
    expect(again.status).toBe(200);
    expect(again.json.code).toBe('token_already_revoked');
    expect(await introspect(token, type)).toEqual({ active: false });
  });

  it('row 4: active refresh token → POST /oauth/token → stays as issued, a new access token is returned', async () => {
    const issued = await issue(s.engine, client);
    const first = await refresh(issued.refresh_token);
    const second = await refresh(issued.refresh_token);
    for (const r of [first, second]) {
      expect(r.status, r.text).toBe(200);
      expect(r.json.refresh_token).toBe(issued.refresh_token);
    }
    expect(first.json.access_token).not.toBe(second.json.access_token);
    expect(await introspect(issued.refresh_token, 'refresh_token')).toMatchObject({ active: true, token_type: 'refresh_token' });
    expect(await introspect(second.json.access_token as string, 'access_token')).toMatchObject({ active: true, jti: second.json.jti });
    // the earlier access tokens stay valid too: nothing is invalidated by a refresh
    expect((await introspect(issued.access_token, 'access_token')).active).toBe(true);
  });

  it('row 5: revoked or expired → POST /oauth/introspection → unchanged, active=false', async () => {
    const revoked = await issue(s.engine, client);
    await revoke(revoked.access_token, 'access_token');
    const expired = await issue(s.engine, client, { accessTtlMs: HOUR });
    s.clock.advance(HOUR);
    try {
      for (let i = 0; i < 2; i++) {
        expect(await introspect(revoked.access_token, 'access_token')).toEqual({ active: false });
        expect(await introspect(expired.access_token, 'access_token')).toEqual({ active: false });
      }
      // unchanged: the revoked one is still "already revoked", the expired one still not revocable
      expect((await revoke(revoked.access_token, 'access_token')).json.code).toBe('token_already_revoked');
      expect((await revoke(expired.access_token, 'access_token')).json.code).toBe('token_invalid');
    } finally {
      s.clock.set(START);
    }
  });
});
