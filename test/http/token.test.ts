import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createClient,
  DAY,
  DOORS,
  formAuth,
  HOUR,
  issue,
  rfcBasic,
  specBasic,
  START,
  startTestServer,
  UUID,
  type Client,
  type TestServer,
} from '../helpers/server.js';
import { introspected } from '../helpers/engine.js';

/** POST /oauth/token (spec 4.1, 2.1, 7.1; contract 3) over a real socket. */
describe.each(DOORS)('POST /oauth/token through the %s', (door) => {
  let s: TestServer;
  let web: Client; // confidential: spec scenario I
  let spa: Client; // public: spec scenario II
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

  const refresh = (client: Client, refreshToken: string, extra: Record<string, string> = {}, auth = specBasic(client)) =>
    s.post('/oauth/token', { grant_type: 'refresh_token', refresh_token: refreshToken, ...extra }, { authorization: auth });

  describe('success: the token response of spec 2.1', () => {
    it('scenario I (double-Base64 header): 200 with all nine fields, typed as 2.1 says', async () => {
      const issued = await issue(s.engine, web);
      const r = await refresh(web, issued.refresh_token);
      expect(r.status, r.text).toBe(200);
      expect(Object.keys(r.json).sort()).toEqual(['access_token', 'expires_in', 'jti', 'node', 'org_id', 'refresh_token', 'scope', 'stime', 'token_type']);
      expect(r.json).toMatchObject({
        expires_in: 3600,
        node: 'node-t',
        org_id: 'org-web-app',
        refresh_token: issued.refresh_token, // spec 3: stays as issued
        scope: 'read write',
        stime: START,
        token_type: 'bearer',
      });
      expect(r.json.access_token).toMatch(/^tca_[A-Za-z0-9_-]{43}$/);
      expect(r.json.access_token).not.toBe(issued.access_token);
      expect(r.json.jti).toMatch(UUID);
      expect(r.json.jti).not.toBe(issued.jti);
      expect(Number.isInteger(r.json.expires_in) && Number.isInteger(r.json.stime)).toBe(true);
      expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    });

    it('the new access token is the jti of the answer and is active', async () => {
      const r = await refresh(web, (await issue(s.engine, web)).refresh_token);
      const seen = await introspected(s.engine, r.json.access_token as string);
      expect(seen).toMatchObject({ active: true, jti: r.json.jti, token_type: 'access_token' });
    });

    it('scenario II (public client, base64(client_id ":")): 200', async () => {
      const issued = await issue(s.engine, spa);
      const r = await refresh(spa, issued.refresh_token);
      expect(r.status, r.text).toBe(200);
      expect(r.json.org_id).toBe('org-spa-app');
    });

    it('the RFC 6749 §2.3.1 Basic form is accepted as well (contract 3)', async () => {
      const r = await refresh(web, (await issue(s.engine, web)).refresh_token, {}, rfcBasic(web));
      expect(r.status, r.text).toBe(200);
    });

    it('a public client may send only the client_id form parameter, without a header (contract 3)', async () => {
      const issued = await issue(s.engine, spa);
      const r = await s.post('/oauth/token', { grant_type: 'refresh_token', refresh_token: issued.refresh_token, client_id: spa.id });
      expect(r.status, r.text).toBe(200);
    });

    it('a form client_id equal to the header’s is fine', async () => {
      const r = await refresh(web, (await issue(s.engine, web)).refresh_token, { client_id: web.id });
      expect(r.status, r.text).toBe(200);
    });

    it('scope narrows the new access token (RFC 6749 §6); a wider one is 400 invalid_scope', async () => {
      const issued = await issue(s.engine, web);
      const narrow = await refresh(web, issued.refresh_token, { scope: 'read' });
      expect(narrow.status, narrow.text).toBe(200);
      expect(narrow.json.scope).toBe('read');
      const wide = await refresh(web, issued.refresh_token, { scope: 'read admin' });
      expect(wide.status).toBe(400);
      expect(wide.json).toEqual({ error: 'invalid_scope', error_description: expect.stringContaining('admin') });
      const malformed = await refresh(web, issued.refresh_token, { scope: 'read "quoted"' });
      expect(malformed.status).toBe(400);
      expect(malformed.json.error).toBe('invalid_scope');
    });
  });

  describe('spec 7.1 and contract 3: the refresh token cannot be used', () => {
    it('expired: 401 invalid_token, the description says expired and ends with the token', async () => {
      const issued = await issue(s.engine, web, { refreshTtlMs: HOUR });
      s.clock.advance(HOUR);
      try {
        const r = await refresh(web, issued.refresh_token);
        expect(r.status).toBe(401);
        expect(Object.keys(r.json).sort()).toEqual(['error', 'error_description']);
        expect(r.json.error).toBe('invalid_token');
        expect(r.json.error_description).toMatch(/expired/);
        expect((r.json.error_description as string).endsWith(issued.refresh_token)).toBe(true);
        expect(r.headers.get('www-authenticate')).toBeNull();
      } finally {
        s.clock.set(START);
      }
    });

    it('revoked: 401 invalid_token saying revoked, without echoing the token', async () => {
      const issued = await issue(s.engine, web);
      await s.engine.revokeAsOperator(issued.refresh_token, 'test');
      const r = await refresh(web, issued.refresh_token);
      expect(r.status).toBe(401);
      expect(r.json.error).toBe('invalid_token');
      expect(r.json.error_description).toMatch(/revoked/);
      expect(r.text).not.toContain(issued.refresh_token);
    });

    it.each([
      ['unknown', () => 'tcr_' + 'A'.repeat(43)],
      ['not a token at all', () => 'hello'],
    ])('%s: 401 invalid_token, not recognised', async (_name, token) => {
      const r = await refresh(web, token());
      expect(r.status).toBe(401);
      expect(r.json).toEqual({ error: 'invalid_token', error_description: expect.stringMatching(/not recognised/) });
    });

    it('an access token presented as refresh token: 401 invalid_token, not recognised', async () => {
      const issued = await issue(s.engine, web);
      const r = await refresh(web, issued.access_token);
      expect(r.status).toBe(401);
      expect(r.json.error_description).toMatch(/not recognised/);
    });

    it('another client’s refresh token reads as not recognised, and stays usable by its owner', async () => {
      const issued = await issue(s.engine, other);
      const r = await refresh(web, issued.refresh_token);
      expect(r.status).toBe(401);
      expect(r.json).toEqual({ error: 'invalid_token', error_description: expect.stringMatching(/not recognised/) });
      expect((await refresh(other, issued.refresh_token)).status).toBe(200);
    });
  });

  describe('client authentication failures: 401 invalid_client, WWW-Authenticate only after an Authorization header', () => {
    /** Contract 3: the Basic challenge goes only with a request that carried `Authorization`. */
    const expectInvalidClient = (r: Awaited<ReturnType<typeof refresh>>, challenged = true) => {
      expect(r.status, r.text).toBe(401);
      expect(r.json.error).toBe('invalid_client');
      expect(typeof r.json.error_description).toBe('string');
      expect(r.headers.get('www-authenticate')).toBe(challenged ? 'Basic realm="tokenctl"' : null);
      expect(r.headers.get('cache-control')).toBe('no-store');
    };

    it('a wrong password, in the spec’s header', async () => {
      const issued = await issue(s.engine, web);
      const r = await refresh(web, issued.refresh_token, {}, specBasic({ id: web.id, secret: 'not-the-password' }));
      expectInvalidClient(r);
      expect(r.json.error_description).toBe(`The client account or password is incorrect: ${web.id}`);
    });

    it('the password in the header without the inner Base64 is refused unless it is the RFC form', async () => {
      const issued = await issue(s.engine, web);
      // RFC form works (web's secret is URL-safe, so raw and urlencoded coincide)...
      expect((await refresh(web, issued.refresh_token, {}, 'Basic ' + Buffer.from(`${web.id}:${web.secret}`).toString('base64'))).status).toBe(200);
      // ...but the password of another client does not.
      expectInvalidClient(await refresh(web, issued.refresh_token, {}, 'Basic ' + Buffer.from(`${web.id}:${other.secret}`).toString('base64')));
    });

    it('an unknown client', async () => {
      const r = await refresh({ id: 'nobody', secret: 'whatever-password' }, (await issue(s.engine, web)).refresh_token);
      expectInvalidClient(r);
      expect(r.json.error_description).toMatch(/nobody/);
    });

    it('a confidential client in scenario II (no password)', async () => {
      expectInvalidClient(await refresh({ id: web.id, secret: null }, (await issue(s.engine, web)).refresh_token));
    });

    it('a public client that sends a password', async () => {
      expectInvalidClient(await refresh({ id: spa.id, secret: 'some-password-1' }, (await issue(s.engine, spa)).refresh_token));
    });

    it('a malformed or non-Basic Authorization header', async () => {
      const rt = (await issue(s.engine, web)).refresh_token;
      for (const auth of ['Basic !!!', 'Bearer abc', 'Basic ' + Buffer.from('no-colon').toString('base64'), 'Basic']) {
        expectInvalidClient(await refresh(web, rt, {}, auth));
      }
    });

    it('no client authentication at all: no challenge, and the description says what to send', async () => {
      const r = await s.post('/oauth/token', { grant_type: 'refresh_token', refresh_token: (await issue(s.engine, web)).refresh_token });
      expectInvalidClient(r, false);
      expect(r.json.error_description).toMatch(/Authorization header.*client_id and client_secret/);
    });

    it('client_secret in the form without client_id: no challenge, the description names client_id', async () => {
      const r = await s.post('/oauth/token', { grant_type: 'refresh_token', refresh_token: (await issue(s.engine, web)).refresh_token, client_secret: web.secret! });
      expectInvalidClient(r, false);
      expect(r.json.error_description).toMatch(/client_id is missing/);
    });

    it('a confidential client presenting only client_id in the form: no challenge', async () => {
      const r = await s.post('/oauth/token', { grant_type: 'refresh_token', refresh_token: (await issue(s.engine, web)).refresh_token, client_id: web.id });
      expectInvalidClient(r, false);
      expect(r.json.error_description).toBe(`The client account or password is incorrect: ${web.id}`);
    });

    it('client_secret_post with a wrong password: 401 invalid_client without a challenge', async () => {
      const r = await s.post('/oauth/token', { grant_type: 'refresh_token', refresh_token: (await issue(s.engine, web)).refresh_token, client_id: web.id, client_secret: 'not-the-password' });
      expectInvalidClient(r, false);
      expect(r.json.error_description).toBe(`The client account or password is incorrect: ${web.id}`);
    });

    it('a public client that sends a password in the form: no challenge', async () => {
      const r = await s.post('/oauth/token', { grant_type: 'refresh_token', refresh_token: (await issue(s.engine, spa)).refresh_token, client_id: spa.id, client_secret: 'some-password-1' });
      expectInvalidClient(r, false);
    });

    it('a rotated secret stops working at once', async () => {
      const rotating = await createClient(s.engine, 'rotating-app');
      const issued = await issue(s.engine, rotating);
      expect((await refresh(rotating, issued.refresh_token)).status).toBe(200); // cached as verified
      const { client_secret } = await s.engine.rotateClientSecret(rotating.id, 'test');
      expectInvalidClient(await refresh(rotating, issued.refresh_token));
      expect((await refresh({ id: rotating.id, secret: client_secret }, issued.refresh_token)).status).toBe(200);
    });
  });

  describe('client_secret_post (RFC 6749 §2.3.1; contract 3, revised 2026-11)', () => {
    it('client_id and client_secret in the form, no header: 200 with the token response', async () => {
      const issued = await issue(s.engine, web);
      const r = await s.post('/oauth/token', { grant_type: 'refresh_token', refresh_token: issued.refresh_token, ...formAuth(web) });
      expect(r.status, r.text).toBe(200);
      expect(r.json).toMatchObject({ refresh_token: issued.refresh_token, token_type: 'bearer', org_id: 'org-web-app' });
    });

    it('the form password is the registered one as is: its Base64 (the spec header’s inner form) is refused', async () => {
      const issued = await issue(s.engine, web);
      const r = await s.post('/oauth/token', { grant_type: 'refresh_token', refresh_token: issued.refresh_token, client_id: web.id, client_secret: Buffer.from(web.secret!).toString('base64') });
      expectInvalidClientBody(r);
    });

    it('a public client’s client_id alone still works (spec scenario II without a header)', async () => {
      const issued = await issue(s.engine, spa);
      const r = await s.post('/oauth/token', { grant_type: 'refresh_token', refresh_token: issued.refresh_token, client_id: spa.id });
      expect(r.status, r.text).toBe(200);
    });

    it('another client’s refresh token through client_secret_post: 401 invalid_token, not recognised', async () => {
      const issued = await issue(s.engine, other);
      const r = await s.post('/oauth/token', { grant_type: 'refresh_token', refresh_token: issued.refresh_token, ...formAuth(web) });
      expect(r.status).toBe(401);
      expect(r.json).toEqual({ error: 'invalid_token', error_description: expect.stringMatching(/not recognised/) });
    });
  });

  describe('bad requests: 400 in the RFC 6749 shape', () => {
    it('grant_type missing: invalid_request naming it', async () => {
      const r = await s.post('/oauth/token', { refresh_token: 'x' }, { authorization: specBasic(web) });
      expect(r.status).toBe(400);
      expect(r.json).toEqual({ error: 'invalid_request', error_description: expect.stringContaining('grant_type') });
    });

    it('grant_type empty counts as missing (RFC 6749 §3.1)', async () => {
      const r = await s.post('/oauth/token', 'grant_type=&refresh_token=x', { authorization: specBasic(web) });
      expect(r.status).toBe(400);
      expect(r.json.error).toBe('invalid_request');
    });

    it.each(['password', 'implicit', 'REFRESH_TOKEN', 'urn:ietf:params:oauth:grant-type:token-exchange'])('grant_type=%s: unsupported_grant_type', async (grantType) => {
      const r = await s.post('/oauth/token', { grant_type: grantType, refresh_token: 'x' }, { authorization: specBasic(web) });
      expect(r.status).toBe(400);
      expect(r.json.error).toBe('unsupported_grant_type');
    });

    it('a grant the client was not registered for: unauthorized_client (RFC 6749 §5.2)', async () => {
      const r = await s.post('/oauth/token', { grant_type: 'client_credentials' }, { authorization: specBasic(web) });
      expect(r.status).toBe(400);
      expect(r.json.error).toBe('unauthorized_client');
    });

    it('refresh_token missing: invalid_request naming it', async () => {
      const r = await s.post('/oauth/token', { grant_type: 'refresh_token' }, { authorization: specBasic(web) });
      expect(r.status).toBe(400);
      expect(r.json).toEqual({ error: 'invalid_request', error_description: expect.stringContaining('refresh_token') });
    });

    it('a parameter given twice: invalid_request', async () => {
      const rt = (await issue(s.engine, web)).refresh_token;
      const r = await s.post('/oauth/token', `grant_type=refresh_token&refresh_token=${rt}&refresh_token=${rt}`, { authorization: specBasic(web) });
      expect(r.status).toBe(400);
      expect(r.json).toEqual({ error: 'invalid_request', error_description: expect.stringContaining('refresh_token') });
    });

    it('header and a form client_id naming another client: invalid_request', async () => {
      const r = await refresh(web, (await issue(s.engine, web)).refresh_token, { client_id: other.id });
      expect(r.status).toBe(400);
      expect(r.json.error).toBe('invalid_request');
    });

    it('header and form client_secret at once: invalid_request (RFC 6749 §2.3, one method)', async () => {
      const r = await refresh(web, (await issue(s.engine, web)).refresh_token, { client_secret: web.secret! });
      expect(r.status).toBe(400);
      expect(r.json.error).toBe('invalid_request');
    });
  });

  function expectInvalidClientBody(r: Awaited<ReturnType<typeof refresh>>): void {
    expect(r.status, r.text).toBe(401);
    expect(r.json.error).toBe('invalid_client');
    expect(r.headers.get('www-authenticate')).toBeNull();
  }

  it('the refresh token lives on after its access tokens expire (spec 3 row 4)', async () => {
    const issued = await issue(s.engine, web, { accessTtlMs: HOUR, refreshTtlMs: DAY });
    s.clock.advance(2 * HOUR);
    try {
      expect((await introspected(s.engine, issued.access_token)).active).toBe(false);
      const r = await refresh(web, issued.refresh_token);
      expect(r.status, r.text).toBe(200);
      expect(r.json.stime).toBe(START + 2 * HOUR);
    } finally {
      s.clock.set(START);
    }
  });
});
