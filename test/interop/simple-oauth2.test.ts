import { AuthorizationCode, type ModuleOptions } from 'simple-oauth2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../src/engine/results.js';
import type { Client } from '../helpers/server.js';
import { startInteropServer, type InteropServer } from './interop-server.js';
import { introspected } from '../helpers/engine.js';

/**
 * simple-oauth2 5, configured as its README says: `auth.tokenHost` with `tokenPath` and
 * `revokePath` (its defaults, /oauth/token and /oauth/revoke, are not read from metadata: it has
 * no discovery), `options.authorizationMethod` ('header', its default, or 'body'),
 * `options.credentialsEncodingMode` ('strict', its default, or 'loose') and `http` options passed
 * to @hapi/wreck (here an https Agent that trusts the development certificate). It has no
 * introspection. Errors are Boom errors from wreck: `output.statusCode`, and the JSON body in
 * `data.payload`.
 */
describe('simple-oauth2 5 against tokenctl over HTTPS', () => {
  let t: InteropServer;
  beforeAll(async () => {
    t = await startInteropServer();
  });
  afterAll(() => t?.close());

  type Options = NonNullable<ModuleOptions['options']>;
  const make = (c: Client, options: Options = {}) =>
    new AuthorizationCode({
      client: { id: c.id, secret: c.secret ?? '' },
      auth: { tokenHost: t.url, tokenPath: '/oauth/token', revokePath: '/oauth/revocation' },
      options,
      http: { agent: t.agent },
    });
  const stored = (oauth: AuthorizationCode, issued: TokenResponse) => oauth.createToken({ ...issued });

  const modes: [string, () => Client, Options][] = [
    ['the defaults (Basic header, strict RFC 6749 encoding)', () => t.web, {}],
    ['authorizationMethod body (client_secret_post)', () => t.web, { authorizationMethod: 'body' }],
    ['the defaults, a secret with : + % and spaces', () => t.odd, {}],
    ['credentialsEncodingMode loose (no encoding), a secret with : + % and spaces', () => t.odd, { credentialsEncodingMode: 'loose' }],
    ['authorizationMethod body, a secret with : + % and spaces', () => t.odd, { authorizationMethod: 'body' }],
    ['a public client in the header (spec scenario II)', () => t.spa, {}],
    ['a public client in the body', () => t.spa, { authorizationMethod: 'body' }],
  ];

  it.each(modes)('refresh with %s', async (_mode, who, options) => {
    const c = who();
    const issued = await t.grant(c);
    const refreshed = await stored(make(c, options), issued).refresh();
    expect(refreshed.token).toMatchObject({ token_type: 'bearer', refresh_token: issued.refresh_token, expires_in: 3600, scope: 'read write' });
    expect(refreshed.token.access_token).not.toBe(issued.access_token);
  });

  it.each(modes)('revokeAll with %s: the access token, then the refresh token and its grant', async (_mode, who, options) => {
    const c = who();
    const issued = await t.grant(c);
    const refreshed = await stored(make(c, options), issued).refresh();
    await refreshed.revokeAll();
    for (const tok of [issued.access_token, issued.refresh_token, refreshed.token.access_token as string]) expect((await introspected(t.s.engine, tok)).active).toBe(false);
  });

  it('spec 7.1, an expired refresh token: a Boom 401 whose payload is {error: invalid_token, error_description: …expired…}', async () => {
    const issued = await t.shortLived(t.web);
    const err = await t.afterExpiry(() => stored(make(t.web), issued).refresh().catch((e: unknown) => e));
    const boom = err as { isBoom?: boolean; output: { statusCode: number }; data: { payload: Record<string, unknown> } };
    expect(boom.isBoom).toBe(true);
    expect(boom.output.statusCode).toBe(401);
    expect(boom.data.payload).toMatchObject({ error: 'invalid_token', error_description: expect.stringMatching(/expired/) });
  });

  it.each([
    ['header', {}],
    ['body', { authorizationMethod: 'body' }],
  ] as [string, Options][])('a wrong secret at the token endpoint (%s): a Boom 401 with invalid_client in the payload', async (_mode, options) => {
    const issued = await t.grant(t.web);
    const err = await stored(make({ id: t.web.id, secret: 'not-the-secret-123' }, options), issued)
      .refresh()
      .catch((e: unknown) => e);
    const boom = err as { output: { statusCode: number; headers: Record<string, string> }; data: { payload: Record<string, unknown> } };
    expect(boom.output.statusCode).toBe(401);
    expect(boom.data.payload).toMatchObject({ error: 'invalid_client' });
  });

  it('spec 7.2, wrong client credentials at revocation: a Boom 401 whose payload is the 7.2 record', async () => {
    const issued = await t.grant(t.web);
    const err = await stored(make({ id: t.web.id, secret: 'not-the-secret-123' }, { authorizationMethod: 'body' }), issued)
      .revoke('access_token')
      .catch((e: unknown) => e);
    const boom = err as { output: { statusCode: number }; data: { payload: Record<string, unknown> } };
    expect(boom.output.statusCode).toBe(401);
    expect(boom.data.payload).toMatchObject({ status: 401, error: 'Unauthorized', message: `The client account or password is incorrect: ${t.web.id}`, path: '/oauth/revocation' });
    expect((await introspected(t.s.engine, issued.access_token)).active).toBe(true);
  });
});
