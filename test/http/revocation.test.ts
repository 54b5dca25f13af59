import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createClient,
  DOORS,
  expectRecord,
  formAuth,
  HOUR,
  issue,
  rfcBasic,
  specBasic,
  START,
  startTestServer,
  type Client,
  type TestServer,
} from '../helpers/server.js';
import { introspected, refreshAs } from '../helpers/engine.js';

/** POST /oauth/revocation (spec 4.2, 2.2, 7.2; contract 3). */
describe.each(DOORS)('POST /oauth/revocation through the %s', (door) => {
  let s: TestServer;
  let web: Client;
  let spa: Client;
  let other: Client;

  beforeAll(async () => {
    s = await startTestServer({ door });
    [web, spa, other] = await Promise.all([
      createClient(s.engine, 'web-app'),
      createClient(s.engine, 'spa-app', { public: true }),
      createClient(s.engine, 'other-app'),
    ]);
  });
  afterAll(() => s?.close());

  const revoke = (client: Client, token: string, hint = 'access_token', headers: Record<string, string> = {}) =>
    s.post('/oauth/revocation', { token, token_type_hint: hint, ...formAuth(client) }, headers);

  describe('results of spec 2.2 and contract 3', () => {
    it('scenario I (form client_id + client_secret as is): token_revoke_success naming type and jti', async () => {
      const issued = await issue(s.engine, web);
      const r = await revoke(web, issued.access_token);
      expect(r.status, r.text).toBe(200);
      expect(Object.keys(r.json).sort()).toEqual(['code', 'message']);
      expect(r.json.code).toBe('token_revoke_success');
      expect(r.json.message).toContain('access_token');
      expect(r.json.message).toContain(issued.jti);
      expect(r.headers.get('cache-control')).toBe('no-store');
      expect(r.headers.get('pragma')).toBe('no-cache');
      expect((await introspected(s.engine, issued.access_token)).active).toBe(false);
    });

    it('scenario II (public client, client_secret omitted): token_revoke_success', async () => {
      const issued = await issue(s.engine, spa);
      const r = await revoke(spa, issued.refresh_token, 'refresh_token');
      expect(r.status, r.text).toBe(200);
      expect(r.json.code).toBe('token_revoke_success');
      expect(r.json.message).toContain('refresh_token');
    });

    it('the same token again: token_already_revoked', async () => {
      const issued = await issue(s.engine, web);
      expect((await revoke(web, issued.access_token)).json.code).toBe('token_revoke_success');
      const again = await revoke(web, issued.access_token);
      expect(again.status).toBe(200);
      expect(again.json.code).toBe('token_already_revoked');
    });

    it('revoking a refresh token revokes the access tokens of its grant', async () => {
      const issued = await issue(s.engine, web);
      const refreshed = await refreshAs(s.engine, { client: web, secret: web.secret!, refreshToken: issued.refresh_token });
      const r = await revoke(web, issued.refresh_token, 'refresh_token');
      expect(r.json.code).toBe('token_revoke_success');
      expect((await introspected(s.engine, issued.access_token)).active).toBe(false);
      expect((await introspected(s.engine, refreshed.access_token)).active).toBe(false);
      expect((await introspected(s.engine, issued.refresh_token)).active).toBe(false);
    });

    it('revoking an access token leaves its refresh token active', async () => {
      const issued = await issue(s.engine, web);
      await revoke(web, issued.access_token);
      expect((await introspected(s.engine, issued.refresh_token)).active).toBe(true);
    });

    it('the hint is only a hint: a refresh token sent as access_token is still revoked', async () => {
      const issued = await issue(s.engine, web);
      const r = await revoke(web, issued.refresh_token, 'access_token');
      expect(r.json.code).toBe('token_revoke_success');
      expect(r.json.message).toContain('refresh_token');
    });

    it('another client’s token: token_invalid, and nothing changes', async () => {
      const issued = await issue(s.engine, other);
      const r = await revoke(web, issued.access_token);
      expect(r.status).toBe(200);
      expect(r.json.code).toBe('token_invalid');
      expect(r.text).not.toContain(issued.jti);
      expect((await introspected(s.engine, issued.access_token)).active).toBe(true);
    });

    it.each([
      ['unknown', 'tca_' + 'Z'.repeat(43)],
      ['malformed', 'not-a-token'],
    ])('an %s token: 200 token_invalid', async (_name, token) => {
      const r = await revoke(web, token);
      expect(r.status).toBe(200);
      expect(r.json).toEqual({ code: 'token_invalid', message: expect.any(String) });
    });

    it('an expired token: token_invalid', async () => {
      const issued = await issue(s.engine, web, { accessTtlMs: HOUR });
      s.clock.advance(HOUR);
      try {
        expect((await revoke(web, issued.access_token)).json.code).toBe('token_invalid');
      } finally {
        s.clock.set(START);
      }
    });

    it('RFC 6749 Basic instead of form credentials (contract 3), also the spec’s header form', async () => {
      for (const auth of [rfcBasic(web), specBasic(web)]) {
        const issued = await issue(s.engine, web);
        const r = await s.post('/oauth/revocation', { token: issued.access_token, token_type_hint: 'access_token' }, { authorization: auth });
        expect(r.status, r.text).toBe(200);
        expect(r.json.code).toBe('token_revoke_success');
      }
    });
  });

  describe('spec 7.2: wrong client credentials are 401 with the record', () => {
    it.each([
      ['a wrong password', (c: Client) => ({ client_id: c.id, client_secret: 'wrong-password-123' })],
      ['an unknown client', () => ({ client_id: 'nobody', client_secret: 'whatever-password' })],
      ['a confidential client without its password', (c: Client) => ({ client_id: c.id })],
      ['the password Base64-encoded (no construction on this endpoint)', (c: Client) => ({ client_id: c.id, client_secret: Buffer.from(c.secret!).toString('base64') })],
    ])('%s', async (_name, creds) => {
      const issued = await issue(s.engine, web);
      const sent = creds(web);
      const r = await s.post('/oauth/revocation', { token: issued.access_token, token_type_hint: 'access_token', ...sent });
      expectRecord(r, 401, 'Unauthorized', '/oauth/revocation');
      expect(r.json.message).toMatch(/incorrect/);
      expect((r.json.message as string).endsWith(sent.client_id)).toBe(true);
      expect((await introspected(s.engine, issued.access_token)).active).toBe(true);
    });

    it('a public client that sends a password', async () => {
      const issued = await issue(s.engine, spa);
      const r = await s.post('/oauth/revocation', { token: issued.access_token, token_type_hint: 'access_token', client_id: spa.id, client_secret: 'any-password-1' });
      expectRecord(r, 401, 'Unauthorized', '/oauth/revocation');
      expect(r.json.message).toMatch(new RegExp(`incorrect.*${spa.id}$`));
    });
  });

  describe('contract 3: other errors keep the record’s shape', () => {
    it.each(['token', 'client_id'])('%s missing: 400 Bad Request naming it', async (name) => {
      const form: Record<string, string> = { token: 'tca_' + 'A'.repeat(43), token_type_hint: 'access_token', ...formAuth(web) };
      delete form[name];
      const r = await s.post('/oauth/revocation', form);
      expectRecord(r, 400, 'Bad Request', '/oauth/revocation');
      expect(r.json.message).toContain(name);
    });

    it.each([
      ['access token', 'access_token'],
      ['refresh token', 'refresh_token'],
    ] as const)('token_type_hint missing or empty (contract 3, revised 2026-11): the %s is found and revoked', async (_what, field) => {
      for (const form of [{}, { token_type_hint: '' }] as Record<string, string>[]) {
        const issued = await issue(s.engine, web);
        const r = await s.post('/oauth/revocation', { token: issued[field], ...form, ...formAuth(web) });
        expect(r.status, r.text).toBe(200);
        expect(r.json.code).toBe('token_revoke_success');
        expect(r.json.message).toContain(field);
        expect((await introspected(s.engine, issued[field])).active).toBe(false);
      }
    });

    it('token_type_hint missing, a token of another client: token_invalid, nothing revoked', async () => {
      const issued = await issue(s.engine, other);
      const r = await s.post('/oauth/revocation', { token: issued.access_token, ...formAuth(web) });
      expect(r.status).toBe(200);
      expect(r.json.code).toBe('token_invalid');
      expect((await introspected(s.engine, issued.access_token)).active).toBe(true);
    });

    it('an unknown token_type_hint: 400 naming the parameter and unsupported_token_type', async () => {
      const r = await revoke(web, 'tca_' + 'A'.repeat(43), 'id_token');
      expectRecord(r, 400, 'Bad Request', '/oauth/revocation');
      expect(r.json.message).toContain('token_type_hint');
      expect(r.json.message).toContain('unsupported_token_type');
    });

    it('a parameter given twice: 400', async () => {
      const r = await s.post('/oauth/revocation', `token=a&token=b&token_type_hint=access_token&client_id=${web.id}&client_secret=${web.secret}`);
      expectRecord(r, 400, 'Bad Request', '/oauth/revocation');
      expect(r.json.message).toMatch(/token.*more than once/);
    });

    it('form client_id and a Basic header for another client: 400', async () => {
      const r = await s.post('/oauth/revocation', { token: 'x', token_type_hint: 'access_token', client_id: other.id }, { authorization: rfcBasic(web) });
      expectRecord(r, 400, 'Bad Request', '/oauth/revocation');
    });
  });
});
