import * as client from 'openid-client';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HAS_CHROMIUM, launchChromium, NO_CHROMIUM_MESSAGE, signInOnDevPage, startLoopbackApp, type Chromium, type LoopbackApp } from '../browser/chromium.js';
import { DOORS, type Client, type Door } from '../helpers/server.js';
import { introspected } from '../helpers/engine.js';
import { startLoginInteropServer, type LoginInteropServer } from './interop-server.js';

/**
 * openid-client 6 (panva) running the whole authorization code flow unchanged, as its
 * documentation shows it: discovery (`algorithm: 'oauth2'`, RFC 8414), an authorization URL with
 * PKCE S256 and `state`, the login in headless Chromium on the development page, the callback
 * (whose `iss` the library checks, RFC 9207), then tokens, refresh, introspection and
 * revocation; a public and a confidential client, through both doors of the server. And the
 * client credentials grant (RFC 6749 §4.4).
 */
let t: LoginInteropServer;
beforeAll(async () => {
  t = await startLoginInteropServer();
});
afterAll(() => t?.close());

const configure = (c: Client, door: Door) =>
  client.discovery(new URL(t.url), c.id, c.secret ?? undefined, c.secret === null ? client.None() : undefined, {
    algorithm: 'oauth2',
    [client.customFetch]: t.fetchThrough(door),
  });

if (!HAS_CHROMIUM) it.skip(NO_CHROMIUM_MESSAGE, () => undefined);

describe.skipIf(!HAS_CHROMIUM)('openid-client 6: the authorization code flow with a login in Chromium', () => {
  let browser: Chromium;
  let page: Page;
  let app: LoopbackApp;
  beforeAll(async () => {
    // The development certificate is the server's own; the library trusts it through its fetch.
    browser = await launchChromium({ ignoreHTTPSErrors: true });
    page = browser.page;
    app = await startLoopbackApp();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  const cases = DOORS.flatMap((door) => [
    [door, 'a public client (none)', () => t.spaLogin],
    [door, 'a confidential client (client_secret_post)', () => t.webLogin],
  ] as const);

  it.each(cases)('through the %s door, %s: login, code, tokens, refresh, introspect, revoke', async (door, _kind, who) => {
    const c = who();
    const config = await configure(c, door);
    const meta = config.serverMetadata();
    expect(meta.authorization_endpoint).toBe(`${t.url}/oauth/authorize`);
    expect(meta.authorization_response_iss_parameter_supported).toBe(true);
    expect(meta.code_challenge_methods_supported).toEqual(['S256']);

    const redirectUri = `${app.url}/callback`;
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const url = client.buildAuthorizationUrl(config, { redirect_uri: redirectUri, scope: 'read', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state });
    const username = `ada-${door.replace(' ', '-')}-${c.id}`;
    const callback = await signInOnDevPage(page, url, username, redirectUri);
    expect(callback.searchParams.get('state')).toBe(state);

    // RFC 9207: a response that names another issuer is refused before the code is spent.
    const mixedUp = new URL(callback);
    mixedUp.searchParams.set('iss', 'https://attacker.example');
    const mixed = await client.authorizationCodeGrant(config, mixedUp, { pkceCodeVerifier: verifier, expectedState: state }).catch((e: unknown) => e);
    expect(mixed).toBeInstanceOf(client.ClientError);
    expect((mixed as client.ClientError).code).toBe('OAUTH_INVALID_RESPONSE');
    expect(((mixed as Error).cause as Error).message).toMatch(/unexpected "iss"/);

    const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
    expect(tokens).toMatchObject({ token_type: 'bearer', scope: 'read', expires_in: 3600 });
    expect(tokens.access_token).toMatch(/^tca_/);
    expect(tokens.refresh_token).toBeTypeOf('string');

    const intro = await client.tokenIntrospection(config, tokens.access_token);
    expect(intro).toMatchObject({ active: true, username, sub: username, client_id: c.id, scope: 'read', iss: t.url });

    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.access_token).toMatch(/^tca_/);
    expect(refreshed.access_token).not.toBe(tokens.access_token);

    await expect(client.tokenRevocation(config, tokens.refresh_token!)).resolves.toBeUndefined();
    expect(await client.tokenIntrospection(config, refreshed.access_token)).toEqual({ active: false });
    expect((await introspected(t.s.engine, tokens.refresh_token!)).active).toBe(false);

    // RFC 6749 §4.1.2: the code was used once; a second exchange is refused.
    const again = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state }).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(client.ResponseBodyError);
    expect((again as client.ResponseBodyError).error).toBe('invalid_grant');
  });

  it('a login the user cancels reaches the library as access_denied, with the state checked', async () => {
    const config = await configure(t.spaLogin, 'fast path');
    const redirectUri = `${app.url}/callback`;
    const state = client.randomState();
    const url = client.buildAuthorizationUrl(config, { redirect_uri: redirectUri, code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()), code_challenge_method: 'S256', state });
    await page.goto(url.href);
    await page.getByRole('button', { name: 'Cancel' }).click();
    await page.waitForURL((u) => u.href.startsWith(redirectUri));
    const err = await client.authorizationCodeGrant(config, new URL(page.url()), { pkceCodeVerifier: client.randomPKCECodeVerifier(), expectedState: state }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(client.AuthorizationResponseError);
    expect((err as client.AuthorizationResponseError).error).toBe('access_denied');
  });
});

describe('openid-client 6: the client credentials grant', () => {
  it.each(DOORS)('through the %s door: an access token without a refresh token, for the client itself', async (door) => {
    const config = await configure(t.cron, door);
    expect(config.serverMetadata().grant_types_supported).toContain('client_credentials');
    const tokens = await client.clientCredentialsGrant(config, { scope: 'reports' });
    expect(tokens).toMatchObject({ token_type: 'bearer', scope: 'reports', expires_in: 3600 });
    expect(tokens.refresh_token).toBeUndefined();
    expect(await client.tokenIntrospection(config, tokens.access_token)).toMatchObject({ active: true, sub: t.cron.id, username: t.cron.id, client_id: t.cron.id });
    await client.tokenRevocation(config, tokens.access_token);
    expect(await client.tokenIntrospection(config, tokens.access_token)).toEqual({ active: false });
  });

  it('a client without the grant is unauthorized_client', async () => {
    const config = await configure(t.webLogin, 'fast path');
    const err = await client.clientCredentialsGrant(config).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(client.ResponseBodyError);
    expect((err as client.ResponseBodyError).error).toBe('unauthorized_client');
  });
});
