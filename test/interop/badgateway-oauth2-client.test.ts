import { OAuth2Client, OAuth2HttpError, type OAuth2Token } from '@badgateway/oauth2-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../src/engine/results.js';
import type { Client } from '../helpers/server.js';
import { startInteropServer, type InteropServer } from './interop-server.js';
import { introspected } from '../helpers/engine.js';

/**
 * @badgateway/oauth2-client 3, configured as its README says: `server` (it discovers the rest from
 * /.well-known/oauth-authorization-server), `clientId`, `clientSecret`, `fetch` (here one that
 * trusts the development certificate), and `authenticationMethod` left unset (it then takes the
 * first of client_secret_basic/client_secret_post in the metadata) or set to each of its three.
 */
describe('@badgateway/oauth2-client 3 against tokenctl over HTTPS', () => {
  let t: InteropServer;
  beforeAll(async () => {
    t = await startInteropServer();
  });
  afterAll(() => t?.close());

  type Method = 'client_secret_basic' | 'client_secret_post' | 'client_secret_basic_interop' | undefined;
  const make = (c: Client, authenticationMethod?: Method) =>
    new OAuth2Client({ server: t.url, clientId: c.id, clientSecret: c.secret ?? undefined, fetch: t.fetch, ...(authenticationMethod && { authenticationMethod }) });
  const token = (issued: TokenResponse): OAuth2Token => ({ accessToken: issued.access_token, refreshToken: issued.refresh_token, expiresAt: null });

  const modes: [string, () => Client, Method][] = [
    ['the default (discovered: client_secret_basic)', () => t.web, undefined],
    ['client_secret_post', () => t.web, 'client_secret_post'],
    ['client_secret_basic_interop (only ":" escaped), a secret with : + % and spaces', () => t.odd, 'client_secret_basic_interop'],
    ['client_secret_basic (strict RFC 6749 encoding), a secret with : + % and spaces', () => t.odd, 'client_secret_basic'],
    ['client_secret_post, a secret with : + % and spaces', () => t.odd, 'client_secret_post'],
    ['a public client (client_id in the body)', () => t.spa, undefined],
  ];

  it('discovery fills in the endpoints from the metadata', async () => {
    const c = make(t.web);
    expect(await c.getEndpoint('tokenEndpoint')).toBe(`${t.url}/oauth/token`);
    expect(await c.getEndpoint('introspectionEndpoint')).toBe(`${t.url}/oauth/introspection`);
    expect(await c.getEndpoint('revocationEndpoint')).toBe(`${t.url}/oauth/revocation`);
  });

  it.each(modes)('refresh with %s', async (_mode, who, method) => {
    const c = who();
    const issued = await t.grant(c);
    const refreshed = await make(c, method).refreshToken(token(issued));
    expect(refreshed.accessToken).toMatch(/^tca_/);
    expect(refreshed.accessToken).not.toBe(issued.access_token);
    expect(refreshed.refreshToken).toBe(issued.refresh_token);
    expect(refreshed.extraParams).toMatchObject({ node: 'node-t', org_id: `org-${c.id}` });
  });

  it.each(modes)('introspection with %s', async (_mode, who, method) => {
    const c = who();
    const issued = await t.grant(c);
    expect(await make(c, method).introspect(token(issued))).toMatchObject({ active: true, client_id: c.id, jti: issued.jti });
  });

  it.each(modes)('revocation of the refresh token with %s', async (_mode, who, method) => {
    const c = who();
    const issued = await t.grant(c);
    await make(c, method).revoke(token(issued), 'refresh_token');
    expect((await introspected(t.s.engine, issued.refresh_token)).active).toBe(false);
    expect((await introspected(t.s.engine, issued.access_token)).active).toBe(false);
  });

  it('spec 7.1, an expired refresh token: OAuth2HttpError, httpCode 401, oauth2Code invalid_token', async () => {
    const issued = await t.shortLived(t.web);
    const err = await t.afterExpiry(() => make(t.web).refreshToken(token(issued)).catch((e: unknown) => e));
    expect(err).toBeInstanceOf(OAuth2HttpError);
    const e = err as OAuth2HttpError;
    expect([e.httpCode, e.oauth2Code]).toEqual([401, 'invalid_token']);
    expect(e.message).toMatch(/expired/);
  });

  it.each(['client_secret_basic', 'client_secret_post'] as const)('a wrong secret at the token endpoint with %s: OAuth2HttpError invalid_client', async (method) => {
    const issued = await t.grant(t.web);
    const err = await make({ id: t.web.id, secret: 'not-the-secret-123' }, method)
      .refreshToken(token(issued))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OAuth2HttpError);
    expect([(err as OAuth2HttpError).httpCode, (err as OAuth2HttpError).oauth2Code]).toEqual([401, 'invalid_client']);
  });

  it('spec 7.2, wrong client credentials at introspection: OAuth2HttpError 401; oauth2Code is the record’s "Unauthorized", the message is in parsedBody', async () => {
    const issued = await t.grant(t.web);
    const err = await make({ id: t.api.id, secret: 'not-the-secret-123' })
      .introspect(token(issued))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OAuth2HttpError);
    const e = err as OAuth2HttpError;
    expect([e.httpCode, e.oauth2Code]).toEqual([401, 'Unauthorized']);
    expect(e.parsedBody).toMatchObject({ message: `The client account or password is incorrect: ${t.api.id}`, path: '/oauth/introspection' });
  });
});
