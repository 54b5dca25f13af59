import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '../helpers/server.js';
import { startInteropServer, type InteropServer } from './interop-server.js';
import { introspected } from '../helpers/engine.js';

/**
 * oauth4webapi 3 (panva), configured as its documentation says: `discoveryRequest` with
 * `algorithm: 'oauth2'`, a `customFetch` that trusts the development certificate, and one
 * ClientAuth per request. It is the strictest of the four: a 401 with a `WWW-Authenticate`
 * challenge becomes WWWAuthenticateChallengeError whatever the body says.
 */
describe('oauth4webapi 3 against tokenctl over HTTPS', () => {
  let t: InteropServer;
  let as: oauth.AuthorizationServer;
  let options: { [oauth.customFetch]: typeof fetch };
  beforeAll(async () => {
    t = await startInteropServer();
    options = { [oauth.customFetch]: t.fetch };
    const issuer = new URL(t.url);
    as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...options }));
  });
  afterAll(() => t?.close());

  const asClient = (c: Client): oauth.Client => ({ client_id: c.id });
  const modes: [string, () => Client, (c: Client) => oauth.ClientAuth][] = [
    ['client_secret_basic', () => t.web, (c) => oauth.ClientSecretBasic(c.secret!)],
    ['client_secret_post', () => t.web, (c) => oauth.ClientSecretPost(c.secret!)],
    ['client_secret_basic, a secret with : + % and spaces', () => t.odd, (c) => oauth.ClientSecretBasic(c.secret!)],
    ['client_secret_post, a secret with : + % and spaces', () => t.odd, (c) => oauth.ClientSecretPost(c.secret!)],
    ['none (a public client)', () => t.spa, () => oauth.None()],
  ];

  it('discovery: the metadata names the three endpoints and the issuer it is served for', () => {
    expect(as.issuer).toBe(t.url);
    expect(as.token_endpoint_auth_methods_supported).toEqual(['client_secret_basic', 'client_secret_post', 'none']);
  });

  it.each(modes)('refresh with %s', async (_mode, who, auth) => {
    const c = who();
    const issued = await t.grant(c);
    const res = await oauth.refreshTokenGrantRequest(as, asClient(c), auth(c), issued.refresh_token, options);
    const result = await oauth.processRefreshTokenResponse(as, asClient(c), res);
    expect(result).toMatchObject({ token_type: 'bearer', refresh_token: issued.refresh_token, expires_in: 3600 });
  });

  it.each(modes)('introspection without token_type_hint with %s', async (_mode, who, auth) => {
    const c = who();
    const issued = await t.grant(c);
    const res = await oauth.introspectionRequest(as, asClient(c), auth(c), issued.refresh_token, options);
    expect(await oauth.processIntrospectionResponse(as, asClient(c), res)).toMatchObject({ active: true, token_type: 'refresh_token', client_id: c.id });
  });

  it.each(modes)('revocation without token_type_hint with %s', async (_mode, who, auth) => {
    const c = who();
    const issued = await t.grant(c);
    const res = await oauth.revocationRequest(as, asClient(c), auth(c), issued.access_token, options);
    await expect(oauth.processRevocationResponse(res)).resolves.toBeUndefined();
    expect((await introspected(t.s.engine, issued.access_token)).active).toBe(false);
  });

  it('spec 7.1, an expired refresh token: ResponseBodyError invalid_token 401', async () => {
    const issued = await t.shortLived(t.web);
    const err = await t.afterExpiry(async () => {
      const res = await oauth.refreshTokenGrantRequest(as, asClient(t.web), oauth.ClientSecretPost(t.web.secret!), issued.refresh_token, options);
      return oauth.processRefreshTokenResponse(as, asClient(t.web), res).catch((e: unknown) => e);
    });
    expect(err).toBeInstanceOf(oauth.ResponseBodyError);
    expect([(err as oauth.ResponseBodyError).status, (err as oauth.ResponseBodyError).error]).toEqual([401, 'invalid_token']);
    expect((err as oauth.ResponseBodyError).error_description).toMatch(/expired/);
  });

  it.each([
    ['client_secret_post', (s: string) => oauth.ClientSecretPost(s), oauth.ResponseBodyError],
    ['client_secret_basic', (s: string) => oauth.ClientSecretBasic(s), oauth.WWWAuthenticateChallengeError],
  ] as const)('a wrong secret at the token endpoint with %s', async (_mode, auth, errorClass) => {
    const issued = await t.grant(t.web);
    const res = await oauth.refreshTokenGrantRequest(as, asClient(t.web), auth('not-the-secret-123'), issued.refresh_token, options);
    const err = await oauth.processRefreshTokenResponse(as, asClient(t.web), res).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(errorClass);
    expect((err as { status: number }).status).toBe(401);
    if (err instanceof oauth.ResponseBodyError) expect(err.error).toBe('invalid_client');
  });

  it('spec 7.2, wrong client credentials at introspection (client_secret_post): ResponseBodyError "Unauthorized" with the record as cause', async () => {
    const issued = await t.grant(t.web);
    const res = await oauth.introspectionRequest(as, asClient(t.api), oauth.ClientSecretPost('not-the-secret-123'), issued.access_token, options);
    const err = await oauth.processIntrospectionResponse(as, asClient(t.api), res).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(oauth.ResponseBodyError);
    expect([(err as oauth.ResponseBodyError).status, (err as oauth.ResponseBodyError).error]).toEqual([401, 'Unauthorized']);
    expect((err as oauth.ResponseBodyError).cause).toMatchObject({ status: 401, path: '/oauth/introspection' });
  });
});
