import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createClient,
  DOORS,
  expectRecord,
  formAuth,
  HOUR,
  ISSUER,
  issue,
  rfcBasic,
  START,
  startTestServer,
  UUID,
  type Client,
  type TestServer,
} from '../helpers/server.js';

/** POST /oauth/introspection (spec 4.3, 2.3, 7.2; contract 3). */
describe.each(DOORS)('POST /oauth/introspection through the %s', (door) => {
  let s: TestServer;
  let web: Client;
  let spa: Client;
  let resourceServer: Client;

  beforeAll(async () => {
    s = await startTestServer({ door });
    [web, spa, resourceServer] = await Promise.all([
      createClient(s.engine, 'web-app', { scope: 'read write admin' }),
      createClient(s.engine, 'spa-app', { public: true }),
      createClient(s.engine, 'resource-server'),
    ]);
  });
  afterAll(() => s?.close());

  const introspect = (client: Client, token: string, hint = 'access_token') =>
    s.post('/oauth/introspection', { token, token_type_hint: hint, ...formAuth(client) });

  describe('an active token: all twelve fields of spec 2.3', () => {
    it('an access token', async () => {
      const issued = await issue(s.engine, web, { username: 'alice', scope: 'read write' });
      const r = await introspect(web, issued.access_token);
      expect(r.status, r.text).toBe(200);
      expect(Object.keys(r.json).sort()).toEqual(['active', 'aud', 'client_id', 'exp', 'iat', 'iss', 'jti', 'nbf', 'scope', 'sub', 'token_type', 'username']);
      expect(r.json).toEqual({
        active: true,
        scope: 'read write',
        client_id: 'web-app',
        username: 'alice',
        token_type: 'access_token',
        exp: Math.floor((START + HOUR) / 1000),
        iat: Math.floor(START / 1000),
        nbf: Math.floor(START / 1000),
        sub: 'alice',
        aud: 'https://api.example.test',
        iss: ISSUER,
        jti: issued.jti,
      });
      expect(r.json.jti).toMatch(UUID);
      for (const f of ['exp', 'iat', 'nbf']) expect(Number.isInteger(r.json[f])).toBe(true);
      expect(r.headers.get('cache-control')).toBe('no-store');
      expect(r.headers.get('pragma')).toBe('no-cache');
    });

    it('a refresh token: token_type refresh_token, its own jti and expiry', async () => {
      const issued = await issue(s.engine, web);
      const r = await introspect(web, issued.refresh_token, 'refresh_token');
      expect(r.json).toMatchObject({ active: true, token_type: 'refresh_token', exp: Math.floor((START + 30 * 24 * HOUR) / 1000) });
      expect(r.json.jti).toMatch(UUID);
      expect(r.json.jti).not.toBe(issued.jti);
    });

    it('the hint is only a hint: a refresh token sent with hint access_token is found', async () => {
      const issued = await issue(s.engine, web);
      expect((await introspect(web, issued.refresh_token, 'access_token')).json).toMatchObject({ active: true, token_type: 'refresh_token' });
    });

    it('any authenticated client may introspect another client’s token (a resource server)', async () => {
      const issued = await issue(s.engine, web);
      expect((await introspect(resourceServer, issued.access_token)).json).toMatchObject({ active: true, client_id: 'web-app' });
    });

    it('scenario II: a public client without client_secret, of its own token', async () => {
      const issued = await issue(s.engine, spa);
      const r = await introspect(spa, issued.access_token);
      expect(r.status, r.text).toBe(200);
      expect(r.json).toMatchObject({ active: true, client_id: spa.id });
    });

    it('a public client, which proves nothing but its id, sees any other client’s token as inactive (contract 3, revised 2026-11)', async () => {
      const issued = await issue(s.engine, web);
      const r = await introspect(spa, issued.access_token);
      expect(r.status, r.text).toBe(200);
      expect(r.json).toStrictEqual({ active: false });
      expect((await introspect(resourceServer, issued.access_token)).json).toMatchObject({ active: true });
    });

    it('RFC 6749 Basic instead of form credentials (contract 3)', async () => {
      const issued = await issue(s.engine, web);
      const r = await s.post('/oauth/introspection', { token: issued.access_token, token_type_hint: 'access_token' }, { authorization: rfcBasic(resourceServer) });
      expect(r.status, r.text).toBe(200);
      expect(r.json.active).toBe(true);
    });
  });

  describe('not active: exactly {"active":false} (spec 2.3, contract 3)', () => {
    it('revoked', async () => {
      const issued = await issue(s.engine, web);
      await s.engine.revokeAsOperator(issued.access_token, 'test');
      const r = await introspect(web, issued.access_token);
      expect(r.status).toBe(200);
      expect(r.text).toBe('{"active":false}');
    });

    it('expired (and exactly at expiry)', async () => {
      const issued = await issue(s.engine, web, { accessTtlMs: HOUR });
      s.clock.advance(HOUR - 1);
      try {
        expect((await introspect(web, issued.access_token)).json.active).toBe(true);
        s.clock.advance(1);
        expect((await introspect(web, issued.access_token)).json).toEqual({ active: false });
      } finally {
        s.clock.set(START);
      }
    });

    it.each([
      ['unknown', 'tca_' + 'B'.repeat(43)],
      ['malformed', 'eyJhbGciOiJIUzI1NiJ9.e30.x'],
      ['a UTF-8 string', 'jeton-à-vérifier'],
    ])('%s', async (_name, token) => {
      const r = await introspect(web, token);
      expect(r.status).toBe(200);
      expect(r.json).toEqual({ active: false });
    });
  });

  describe('spec 7.2: wrong client credentials', () => {
    it.each([
      ['a wrong password', (c: Client) => ({ client_id: c.id, client_secret: 'wrong-password-123' })],
      ['an unknown client', () => ({ client_id: 'ghost', client_secret: 'whatever-password' })],
      ['a confidential client without its password', (c: Client) => ({ client_id: c.id })],
    ])('%s: 401 record naming the client', async (_name, creds) => {
      const issued = await issue(s.engine, web);
      const sent = creds(web);
      const r = await s.post('/oauth/introspection', { token: issued.access_token, token_type_hint: 'access_token', ...sent });
      expectRecord(r, 401, 'Unauthorized', '/oauth/introspection');
      expect(r.json.message).toBe(`The client account or password is incorrect: ${sent.client_id}`);
      expect(r.text).not.toContain('"active"');
    });

    it('a public client that sends a password', async () => {
      const r = await s.post('/oauth/introspection', { token: 'x', token_type_hint: 'access_token', client_id: spa.id, client_secret: 'some-password-1' });
      expectRecord(r, 401, 'Unauthorized', '/oauth/introspection');
    });
  });

  describe('contract 3: 400 in the record’s shape', () => {
    it.each(['token', 'client_id'])('%s missing', async (name) => {
      const form: Record<string, string> = { token: 'tca_' + 'A'.repeat(43), token_type_hint: 'access_token', ...formAuth(web) };
      delete form[name];
      const r = await s.post('/oauth/introspection', form);
      expectRecord(r, 400, 'Bad Request', '/oauth/introspection');
      expect(r.json.message).toContain(name);
    });

    it('token empty counts as missing', async () => {
      const r = await s.post('/oauth/introspection', { token: '', token_type_hint: 'access_token', ...formAuth(web) });
      expectRecord(r, 400, 'Bad Request', '/oauth/introspection');
    });

    it('token_type_hint missing or empty (contract 3, revised 2026-11): access and refresh tokens are found, active', async () => {
      const issued = await issue(s.engine, web);
      for (const [token, type] of [
        [issued.access_token, 'access_token'],
        [issued.refresh_token, 'refresh_token'],
      ]) {
        for (const hint of [{}, { token_type_hint: '' }] as Record<string, string>[]) {
          const r = await s.post('/oauth/introspection', { token: token!, ...hint, ...formAuth(web) });
          expect(r.status, r.text).toBe(200);
          expect(r.json).toMatchObject({ active: true, token_type: type, client_id: web.id });
        }
      }
      const unknown = await s.post('/oauth/introspection', { token: 'tca_' + 'A'.repeat(43), ...formAuth(web) });
      expect(unknown.json).toEqual({ active: false });
    });

    it('an unknown token_type_hint: unsupported_token_type', async () => {
      const r = await introspect(web, 'x', 'id_token');
      expectRecord(r, 400, 'Bad Request', '/oauth/introspection');
      expect(r.json.message).toMatch(/unsupported_token_type.*token_type_hint|token_type_hint.*unsupported_token_type/);
    });
  });
});
