import * as oauth from 'oauth4webapi';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HAS_CHROMIUM, launchChromium, NO_CHROMIUM_MESSAGE, signInOnDevPage, startLoopbackApp, type Chromium, type LoopbackApp } from '../browser/chromium.js';
import { DOORS, type Client, type Door } from '../helpers/server.js';
import { startLoginInteropServer, type LoginInteropServer } from './interop-server.js';

/**
 * oauth4webapi 3 (panva), the strictest of the libraries, running the whole authorization code
 * flow unchanged: discovery (`algorithm: 'oauth2'`), an authorization URL with PKCE S256 and
 * `state`, the login in headless Chromium on the development page, `validateAuthResponse` of the
 * callback (state, and `iss` since the metadata promises it, RFC 9207), the code exchange, then
 * refresh, introspection and revocation; a public and a confidential client, through both doors
 * of the server. And the client credentials grant (RFC 6749 §4.4).
 */
let t: LoginInteropServer;
const asFor = new Map<Door, oauth.AuthorizationServer>();
beforeAll(async () => {
  t = await startLoginInteropServer();
  for (const door of DOORS) {
    const issuer = new URL(t.url);
    asFor.set(door, await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', [oauth.customFetch]: t.fetchThrough(door) })));
  }
});
afterAll(() => t?.close());

const asClient = (c: Client): oauth.Client => ({ client_id: c.id });
const auth = (c: Client) => (c.secret === null ? oauth.None() : oauth.ClientSecretBasic(c.secret));
const options = (door: Door) => ({ [oauth.customFetch]: t.fetchThrough(door) });

if (!HAS_CHROMIUM) it.skip(NO_CHROMIUM_MESSAGE, () => undefined);

describe.skipIf(!HAS_CHROMIUM)('oauth4webapi 3: the authorization code flow with a login in Chromium', () => {
  let browser: Chromium;
  let page: Page;
  let app: LoopbackApp;
  beforeAll(async () => {
    browser = await launchChromium({ ignoreHTTPSErrors: true });
    page = browser.page;
    app = await startLoopbackApp();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  /** The authorization URL as the library's documentation builds it. */
  async function authorizationUrl(as: oauth.AuthorizationServer, c: Client, redirectUri: string, verifier: string, state: string): Promise<URL> {
    const url = new URL(as.authorization_endpoint!);
    url.searchParams.set('client_id', c.id);
    url.searchParams.set('redirect_uri', redirectUri);
    url.searchParams.set('response_type', 'code');
    url.searchParams.set('scope', 'read write');
    url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(verifier));
    url.searchParams.set('code_challenge_method', 'S256');
    url.searchParams.set('state', state);
    return url;
  }

  const cases = DOORS.flatMap((door) => [
    [door, 'a public client (none)', () => t.spaLogin],
    [door, 'a confidential client (client_secret_basic)', () => t.webLogin],
  ] as const);

  it.each(cases)('through the %s door, %s: login, code, tokens, refresh, introspect, revoke', async (door, _kind, who) => {
    const c = who();
    const as = asFor.get(door)!;
    expect(as.authorization_endpoint).toBe(`${t.url}/oauth/authorize`);
    expect(as.response_types_supported).toEqual(['code']);

    const redirectUri = `${app.url}/callback`;
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const username = `grace-${door.replace(' ', '-')}-${c.id}`;
    const callback = await signInOnDevPage(page, await authorizationUrl(as, c, redirectUri, verifier, state), username, redirectUri);

    // RFC 9207: another issuer's response, or one without iss, is refused; so is another state.
    const withIss = (iss: string | null) => {
      const u = new URL(callback);
      if (iss === null) u.searchParams.delete('iss');
      else u.searchParams.set('iss', iss);
      return u;
    };
    expect(() => oauth.validateAuthResponse(as, asClient(c), withIss('https://attacker.example'), state)).toThrow(/unexpected "iss"/);
    expect(() => oauth.validateAuthResponse(as, asClient(c), withIss(null), state)).toThrow(/"iss"/);
    expect(() => oauth.validateAuthResponse(as, asClient(c), callback, oauth.generateRandomState())).toThrow(/state/);

    const params = oauth.validateAuthResponse(as, asClient(c), callback, state);
    const res = await oauth.authorizationCodeGrantRequest(as, asClient(c), auth(c), params, redirectUri, verifier, options(door));
    const tokens = await oauth.processAuthorizationCodeResponse(as, asClient(c), res);
    expect(tokens).toMatchObject({ token_type: 'bearer', scope: 'read write', expires_in: 3600 });
    expect(tokens.access_token).toMatch(/^tca_/);

    const intro = await oauth.processIntrospectionResponse(as, asClient(c), await oauth.introspectionRequest(as, asClient(c), auth(c), tokens.access_token, options(door)));
    expect(intro).toMatchObject({ active: true, username, sub: username, client_id: c.id, scope: 'read write' });

    const refreshed = await oauth.processRefreshTokenResponse(as, asClient(c), await oauth.refreshTokenGrantRequest(as, asClient(c), auth(c), tokens.refresh_token!, options(door)));
    expect(refreshed.access_token).not.toBe(tokens.access_token);

    await oauth.processRevocationResponse(await oauth.revocationRequest(as, asClient(c), auth(c), tokens.refresh_token!, options(door)));
    const after = await oauth.processIntrospectionResponse(as, asClient(c), await oauth.introspectionRequest(as, asClient(c), auth(c), refreshed.access_token, options(door)));
    expect(after).toEqual({ active: false });

    // RFC 6749 §4.1.2: the code is single-use.
    const again = await oauth.authorizationCodeGrantRequest(as, asClient(c), auth(c), params, redirectUri, verifier, options(door));
    const err = await oauth.processAuthorizationCodeResponse(as, asClient(c), again).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(oauth.ResponseBodyError);
    expect((err as oauth.ResponseBodyError).error).toBe('invalid_grant');
  });

  it('a wrong code_verifier is invalid_grant (RFC 7636 §4.6), and the code is still good for the right one', async () => {
    const as = asFor.get('fast path')!;
    const c = t.spaLogin;
    const redirectUri = `${app.url}/callback`;
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const callback = await signInOnDevPage(page, await authorizationUrl(as, c, redirectUri, verifier, state), 'ivan', redirectUri);
    const params = oauth.validateAuthResponse(as, asClient(c), callback, state);
    const wrong = await oauth.authorizationCodeGrantRequest(as, asClient(c), auth(c), params, redirectUri, oauth.generateRandomCodeVerifier(), options('fast path'));
    const err = await oauth.processAuthorizationCodeResponse(as, asClient(c), wrong).catch((e: unknown) => e);
    expect((err as oauth.ResponseBodyError).error).toBe('invalid_grant');
    const right = await oauth.authorizationCodeGrantRequest(as, asClient(c), auth(c), params, redirectUri, verifier, options('fast path'));
    expect((await oauth.processAuthorizationCodeResponse(as, asClient(c), right)).access_token).toMatch(/^tca_/);
  });
});

describe('oauth4webapi 3: the client credentials grant', () => {
  it.each(DOORS)('through the %s door: an access token without a refresh token, for the client itself', async (door) => {
    const as = asFor.get(door)!;
    const c = t.cron;
    const res = await oauth.clientCredentialsGrantRequest(as, asClient(c), auth(c), { scope: 'reports' }, options(door));
    const tokens = await oauth.processClientCredentialsResponse(as, asClient(c), res);
    expect(tokens).toMatchObject({ token_type: 'bearer', scope: 'reports', expires_in: 3600 });
    expect(tokens.refresh_token).toBeUndefined();
    const intro = await oauth.processIntrospectionResponse(as, asClient(c), await oauth.introspectionRequest(as, asClient(c), auth(c), tokens.access_token, options(door)));
    expect(intro).toMatchObject({ active: true, sub: c.id, username: c.id, client_id: c.id, scope: 'reports' });
  });

  it('a scope the client was not registered for is invalid_scope', async () => {
    const as = asFor.get('fast path')!;
    const res = await oauth.clientCredentialsGrantRequest(as, asClient(t.cron), auth(t.cron), { scope: 'admin' }, options('fast path'));
    const err = await oauth.processClientCredentialsResponse(as, asClient(t.cron), res).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(oauth.ResponseBodyError);
    expect((err as oauth.ResponseBodyError).error).toBe('invalid_scope');
  });
});
