import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selfSignedCertificate } from '../../src/serve/tls.js';
import { createClient, fetchTrusting, HOUR, issue, START, startTestServer, type Client, type TestServer } from '../helpers/server.js';
import { introspected } from '../helpers/engine.js';

/**
 * A standard OAuth client library works unchanged (the issue's interoperability check):
 * oauth4webapi, which follows RFC 6749/7009/7662/8414 strictly, for discovery, refresh,
 * revocation and introspection. The suite of test/interop/ drives more libraries against a real
 * `tokenctl serve` process; this one runs in-process on both transports.
 */
describe.each([
  ['plain HTTP on loopback', false],
  ['HTTPS with a self-signed certificate', true],
])('oauth4webapi interoperability over %s', (_name, useTls) => {
  let s: TestServer;
  let web: Client;
  let spa: Client;
  let as: oauth.AuthorizationServer;
  let options: { [oauth.allowInsecureRequests]?: boolean; [oauth.customFetch]?: typeof fetch };

  beforeAll(async () => {
    const tls = useTls ? await selfSignedCertificate('127.0.0.1') : undefined;
    s = await startTestServer(tls ? { https: { key: tls.key, cert: tls.cert } } : {});
    s.engine.config.issuer = s.url; // as `serve` does when no --issuer is given
    options = tls ? { [oauth.customFetch]: fetchTrusting(tls.cert) } : { [oauth.allowInsecureRequests]: true };
    [web, spa] = await Promise.all([createClient(s.engine, 'web-app'), createClient(s.engine, 'spa-app', { public: true })]);
    const issuer = new URL(s.url);
    as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...options }));
  });
  afterAll(() => s?.close());

  const asClient = (c: Client): oauth.Client => ({ client_id: c.id });
  const basic = (c: Client) => (c.secret === null ? oauth.None() : oauth.ClientSecretBasic(c.secret));
  const post = (c: Client) => (c.secret === null ? oauth.None() : oauth.ClientSecretPost(c.secret));

  it('discovery: processDiscoveryResponse accepts the metadata and its issuer', () => {
    expect(as.issuer).toBe(s.url);
    expect(as.token_endpoint).toBe(`${s.url}/oauth/token`);
    expect(as.revocation_endpoint).toBe(`${s.url}/oauth/revocation`);
    expect(as.introspection_endpoint).toBe(`${s.url}/oauth/introspection`);
  });

  it.each([
    ['client_secret_basic', false],
    ['none (public client)', true],
  ])('refresh with %s: processRefreshTokenResponse accepts the 2.1 response', async (_auth, isPublic) => {
    const c = isPublic ? spa : web;
    const issued = await issue(s.engine, c);
    const res = await oauth.refreshTokenGrantRequest(as, asClient(c), basic(c), issued.refresh_token, options);
    const result = await oauth.processRefreshTokenResponse(as, asClient(c), res);
    expect(result.token_type).toBe('bearer');
    expect(result.access_token).toMatch(/^tca_/);
    expect(result.refresh_token).toBe(issued.refresh_token);
    expect(result.expires_in).toBe(3600);
    expect(result.scope).toBe('read write');
    expect(result.jti).toBeTypeOf('string');
  });

  it('refresh with an expired token: a ResponseBodyError with invalid_token and status 401', async () => {
    const issued = await issue(s.engine, web, { refreshTtlMs: HOUR });
    s.clock.advance(HOUR);
    try {
      const res = await oauth.refreshTokenGrantRequest(as, asClient(web), basic(web), issued.refresh_token, options);
      const err = await oauth.processRefreshTokenResponse(as, asClient(web), res).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(oauth.ResponseBodyError);
      expect((err as oauth.ResponseBodyError).status).toBe(401);
      expect((err as oauth.ResponseBodyError).error).toBe('invalid_token');
      expect((err as oauth.ResponseBodyError).error_description).toMatch(/expired/);
    } finally {
      s.clock.set(START);
    }
  });

  it('refresh with a wrong secret in client_secret_basic: the Basic challenge is surfaced (WWWAuthenticateChallengeError)', async () => {
    const issued = await issue(s.engine, web);
    const res = await oauth.refreshTokenGrantRequest(as, asClient(web), oauth.ClientSecretBasic('wrong-secret-123'), issued.refresh_token, options);
    const err = await oauth.processRefreshTokenResponse(as, asClient(web), res).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(oauth.WWWAuthenticateChallengeError);
    expect((err as oauth.WWWAuthenticateChallengeError).status).toBe(401);
    expect((err as oauth.WWWAuthenticateChallengeError).cause[0]?.scheme).toBe('basic');
  });

  it.each([
    ['client_secret_post', false, post],
    ['client_secret_basic', false, basic],
    ['none', true, post],
  ] as const)('introspection with %s: processIntrospectionResponse accepts the 2.3 record', async (_auth, isPublic, auth) => {
    const c = isPublic ? spa : web; // a public client introspects its own tokens only
    const issued = await issue(s.engine, c);
    const res = await oauth.introspectionRequest(as, asClient(c), auth(c), issued.access_token, {
      ...options,
      additionalParameters: { token_type_hint: 'access_token' },
    });
    const result = await oauth.processIntrospectionResponse(as, asClient(c), res);
    expect(result).toMatchObject({ active: true, client_id: c.id, token_type: 'access_token', iss: s.url, jti: issued.jti, sub: 'alice' });
  });

  it.each([
    ['client_secret_post', false, post],
    ['client_secret_basic', false, basic],
    ['none', true, post],
  ] as const)('revocation with %s: processRevocationResponse accepts the answer and the token is revoked', async (_auth, isPublic, auth) => {
    const c = isPublic ? spa : web;
    const issued = await issue(s.engine, c);
    const res = await oauth.revocationRequest(as, asClient(c), auth(c), issued.refresh_token, {
      ...options,
      additionalParameters: { token_type_hint: 'refresh_token' },
    });
    await expect(oauth.processRevocationResponse(res)).resolves.toBeUndefined();
    expect((await introspected(s.engine, issued.refresh_token)).active).toBe(false);
    expect((await introspected(s.engine, issued.access_token)).active).toBe(false);
  });

  it('introspection of a revoked token: {active: false}', async () => {
    const issued = await issue(s.engine, web);
    await s.engine.revokeAsOperator(issued.access_token, 'test');
    const res = await oauth.introspectionRequest(as, asClient(web), basic(web), issued.access_token, { ...options, additionalParameters: { token_type_hint: 'access_token' } });
    expect(await oauth.processIntrospectionResponse(as, asClient(web), res)).toEqual({ active: false });
  });

  it("without token_type_hint (the library's default; contract 3 revised 2026-11): introspection and revocation work", async () => {
    const issued = await issue(s.engine, web);
    const res = await oauth.introspectionRequest(as, asClient(web), basic(web), issued.access_token, options);
    expect(await oauth.processIntrospectionResponse(as, asClient(web), res)).toMatchObject({ active: true, jti: issued.jti });
    const revoked = await oauth.revocationRequest(as, asClient(web), post(web), issued.refresh_token, options);
    await expect(oauth.processRevocationResponse(revoked)).resolves.toBeUndefined();
    expect((await introspected(s.engine, issued.access_token)).active).toBe(false);
  });

  it('refresh with client_secret_post: accepted; with a wrong secret the body (invalid_client) is surfaced, no challenge', async () => {
    const issued = await issue(s.engine, web);
    const ok = await oauth.refreshTokenGrantRequest(as, asClient(web), post(web), issued.refresh_token, options);
    expect((await oauth.processRefreshTokenResponse(as, asClient(web), ok)).access_token).toMatch(/^tca_/);
    const res = await oauth.refreshTokenGrantRequest(as, asClient(web), oauth.ClientSecretPost('wrong-secret-123'), issued.refresh_token, options);
    const err = await oauth.processRefreshTokenResponse(as, asClient(web), res).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(oauth.ResponseBodyError);
    expect((err as oauth.ResponseBodyError).status).toBe(401);
    expect((err as oauth.ResponseBodyError).error).toBe('invalid_client');
  });
});
