import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '../helpers/server.js';
import { startInteropServer, type InteropServer } from './interop-server.js';
import { introspected } from '../helpers/engine.js';

/**
 * openid-client 6 (panva), configured as its documentation says: `discovery()` of the issuer,
 * with `algorithm: 'oauth2'` (RFC 8414; tokenctl is no OpenID Provider) and a `customFetch` that
 * trusts the development certificate. Its default client authentication is client_secret_post.
 */
describe('openid-client 6 against tokenctl over HTTPS', () => {
  let t: InteropServer;
  beforeAll(async () => {
    t = await startInteropServer();
  });
  afterAll(() => t?.close());

  const configure = (c: Client, auth?: client.ClientAuth) =>
    client.discovery(new URL(t.url), c.id, c.secret ?? undefined, auth ?? (c.secret === null ? client.None() : undefined), {
      algorithm: 'oauth2',
      [client.customFetch]: t.fetch,
    });

  it('discovery of the RFC 8414 metadata: the three endpoints and client_secret_post at the token endpoint', async () => {
    const config = await configure(t.web);
    const meta = config.serverMetadata();
    expect(meta.issuer).toBe(t.url);
    expect(meta.token_endpoint).toBe(`${t.url}/oauth/token`);
    expect(meta.revocation_endpoint).toBe(`${t.url}/oauth/revocation`);
    expect(meta.introspection_endpoint).toBe(`${t.url}/oauth/introspection`);
    expect(meta.token_endpoint_auth_methods_supported).toContain('client_secret_post');
  });

  it('discovery on its default (OpenID Connect) algorithm: tokenctl has no openid-configuration, a 404 the library reports', async () => {
    const err = await client.discovery(new URL(t.url), t.web.id, t.web.secret!, undefined, { [client.customFetch]: t.fetch }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(client.ClientError);
    expect((err as client.ClientError).code).toBe('OAUTH_RESPONSE_IS_NOT_CONFORM');
    expect((err as client.ClientError).message).toMatch(/status code/);
    expect((err as { cause?: Response }).cause?.status).toBe(404);
  });

  const modes: [string, () => Client, () => client.ClientAuth | undefined][] = [
    ['client_secret_post (the default)', () => t.web, () => undefined],
    ['client_secret_basic', () => t.web, () => client.ClientSecretBasic(t.web.secret!)],
    ['client_secret_post, a secret with : + % and spaces', () => t.odd, () => undefined],
    ['client_secret_basic, a secret with : + % and spaces', () => t.odd, () => client.ClientSecretBasic(t.odd.secret!)],
    ['none (a public client)', () => t.spa, () => client.None()],
  ];

  it.each(modes)('refresh with %s', async (_mode, who, auth) => {
    const c = who();
    const issued = await t.grant(c);
    const config = await configure(c, auth());
    const tokens = await client.refreshTokenGrant(config, issued.refresh_token);
    expect(tokens.access_token).toMatch(/^tca_/);
    expect(tokens.refresh_token).toBe(issued.refresh_token);
    expect(tokens.token_type).toBe('bearer');
    expect(tokens.expires_in).toBe(3600);
  });

  it.each(modes)('introspection without token_type_hint (the library sends none) with %s', async (_mode, who, auth) => {
    const c = who();
    const issued = await t.grant(c);
    const config = await configure(c, auth());
    const result = await client.tokenIntrospection(config, issued.access_token);
    expect(result).toMatchObject({ active: true, client_id: c.id, token_type: 'access_token', jti: issued.jti, iss: t.url });
  });

  it.each(modes)('revocation without token_type_hint with %s: the refresh token and its grant are revoked', async (_mode, who, auth) => {
    const c = who();
    const issued = await t.grant(c);
    const config = await configure(c, auth());
    await expect(client.tokenRevocation(config, issued.refresh_token)).resolves.toBeUndefined();
    expect((await introspected(t.s.engine, issued.refresh_token)).active).toBe(false);
    expect((await introspected(t.s.engine, issued.access_token)).active).toBe(false);
    expect(await client.tokenIntrospection(await configure(t.api), issued.access_token)).toEqual({ active: false });
  });

  it('spec 7.1, an expired refresh token: ResponseBodyError invalid_token, status 401, the description says expired', async () => {
    const issued = await t.shortLived(t.web);
    const config = await configure(t.web);
    const err = await t.afterExpiry(() => client.refreshTokenGrant(config, issued.refresh_token).catch((e: unknown) => e));
    expect(err).toBeInstanceOf(client.ResponseBodyError);
    const e = err as client.ResponseBodyError;
    expect([e.status, e.error]).toEqual([401, 'invalid_token']);
    expect(e.error_description).toMatch(/expired/);
  });

  it('a wrong secret at the token endpoint, client_secret_post: ResponseBodyError invalid_client (no challenge to hide it)', async () => {
    const issued = await t.grant(t.web);
    const config = await configure({ id: t.web.id, secret: 'not-the-secret-123' });
    const err = await client.refreshTokenGrant(config, issued.refresh_token).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(client.ResponseBodyError);
    expect([(err as client.ResponseBodyError).status, (err as client.ResponseBodyError).error]).toEqual([401, 'invalid_client']);
  });

  it('a wrong secret in client_secret_basic: WWWAuthenticateChallengeError (the header was Basic, so is the challenge)', async () => {
    const issued = await t.grant(t.web);
    const config = await configure(t.web, client.ClientSecretBasic('not-the-secret-123'));
    const err = await client.refreshTokenGrant(config, issued.refresh_token).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(client.WWWAuthenticateChallengeError);
    expect((err as client.WWWAuthenticateChallengeError).status).toBe(401);
  });

  it('spec 7.2, wrong client credentials at introspection: ResponseBodyError, status 401, error "Unauthorized"', async () => {
    const issued = await t.grant(t.web);
    const config = await configure({ id: t.api.id, secret: 'not-the-secret-123' });
    const err = await client.tokenIntrospection(config, issued.access_token).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(client.ResponseBodyError);
    const e = err as client.ResponseBodyError;
    expect([e.status, e.error]).toEqual([401, 'Unauthorized']);
    expect(e.cause).toMatchObject({ message: `The client account or password is incorrect: ${t.api.id}`, path: '/oauth/introspection' });
  });

  it('spec 7.2 at revocation: the same ResponseBodyError', async () => {
    const issued = await t.grant(t.web);
    const config = await configure({ id: t.web.id, secret: 'not-the-secret-123' });
    const err = await client.tokenRevocation(config, issued.access_token).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(client.ResponseBodyError);
    expect([(err as client.ResponseBodyError).status, (err as client.ResponseBodyError).error]).toEqual([401, 'Unauthorized']);
    expect((await introspected(t.s.engine, issued.access_token)).active).toBe(true);
  });
});
