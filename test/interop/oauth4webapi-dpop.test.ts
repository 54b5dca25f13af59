import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLoopbackApp, type LoopbackApp } from '../browser/chromium.js';
import { devLogin } from '../helpers/browser.js';
import { DOORS, type Client, type Door } from '../helpers/server.js';
import { startLoginInteropServer, type LoginInteropServer } from './interop-server.js';

/**
 * oauth4webapi 3 with its DPoP handle (`oauth.DPoP(client, keyPair)`, RFC 9449), unchanged: tokens
 * by client credentials and by the authorization code flow (the development login walked over
 * HTTP), a refresh of the bound refresh token, `token_type` DPoP as the library checks it, and
 * introspection's `cnf.jkt` equal to the key's thumbprint. A bound refresh token used without its
 * key, or with another one, gets nothing. Through both doors of the server.
 */
let t: LoginInteropServer;
let loopback: LoopbackApp;
const asFor = new Map<Door, oauth.AuthorizationServer>();
beforeAll(async () => {
  t = await startLoginInteropServer();
  // The library dates its proofs by the real clock; the server's proof window reads its own.
  t.s.clock.set(Date.now());
  loopback = await startLoopbackApp();
  for (const door of DOORS) {
    const issuer = new URL(t.url);
    asFor.set(door, await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', [oauth.customFetch]: t.fetchThrough(door) })));
  }
});
afterAll(async () => {
  await loopback?.close();
  await t?.close();
});

const asClient = (c: Client): oauth.Client => ({ client_id: c.id });
const auth = (c: Client) => (c.secret === null ? oauth.None() : oauth.ClientSecretBasic(c.secret));
const options = (door: Door, DPoP?: oauth.DPoPHandle) => ({ [oauth.customFetch]: t.fetchThrough(door), ...(DPoP && { DPoP }) });

/** RFC 7638 thumbprint of a key pair's public key, as the server computes `cnf.jkt`. */
async function thumbprint(keyPair: Awaited<ReturnType<typeof oauth.generateKeyPair>>): Promise<string> {
  const jwk = (await crypto.subtle.exportKey('jwk', keyPair.publicKey)) as { crv: string; kty: string; x: string; y: string };
  const canonical = JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y });
  return Buffer.from(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(canonical))).toString('base64url');
}

async function introspectedJkt(door: Door, token: string): Promise<unknown> {
  const as = asFor.get(door)!;
  const res = await oauth.introspectionRequest(as, asClient(t.api), auth(t.api), token, options(door));
  const body = await oauth.processIntrospectionResponse(as, asClient(t.api), res);
  expect(body.active).toBe(true);
  return (body.cnf as { jkt?: string } | undefined)?.jkt;
}

describe.each(DOORS)('oauth4webapi 3 with DPoP (%s)', (door) => {
  it('client credentials: token_type DPoP, and introspection names the key', async () => {
    const as = asFor.get(door)!;
    const keyPair = await oauth.generateKeyPair('ES256');
    const DPoP = oauth.DPoP(asClient(t.cron), keyPair);
    const res = await oauth.clientCredentialsGrantRequest(as, asClient(t.cron), auth(t.cron), new URLSearchParams({ scope: 'reports' }), options(door, DPoP));
    const tokens = await oauth.processClientCredentialsResponse(as, asClient(t.cron), res);
    expect(tokens.token_type).toBe('dpop');
    expect(await introspectedJkt(door, tokens.access_token)).toBe(await thumbprint(keyPair));
  });

  it.each([
    ['a public client', () => t.spaLogin],
    ['a confidential client', () => t.webLogin],
  ] as const)('%s: code flow and refresh bound to the key; a stolen refresh token without it gets nothing', async (_kind, who) => {
    const c = who();
    const as = asFor.get(door)!;
    const keyPair = await oauth.generateKeyPair('ES256');
    const DPoP = oauth.DPoP(asClient(c), keyPair);
    const redirectUri = `${loopback.url}/callback`;
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const url = new URL(as.authorization_endpoint!);
    for (const [k, v] of Object.entries({ client_id: c.id, redirect_uri: redirectUri, response_type: 'code', scope: 'read write', state, code_challenge_method: 'S256' })) url.searchParams.set(k, v);
    url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(verifier));
    const { callback } = await devLogin(url.href, { username: `dpop-${door.replace(' ', '-')}-${c.id}`, fetch: t.fetch });
    const params = oauth.validateAuthResponse(as, asClient(c), callback, state);
    const tokens = await oauth.processAuthorizationCodeResponse(as, asClient(c), await oauth.authorizationCodeGrantRequest(as, asClient(c), auth(c), params, redirectUri, verifier, options(door, DPoP)));
    expect(tokens.token_type).toBe('dpop');
    const jkt = await thumbprint(keyPair);
    expect(await introspectedJkt(door, tokens.access_token)).toBe(jkt);
    expect(await introspectedJkt(door, tokens.refresh_token!)).toBe(jkt);

    // The holder of the key refreshes; the new access token is bound too.
    const refreshed = await oauth.processRefreshTokenResponse(as, asClient(c), await oauth.refreshTokenGrantRequest(as, asClient(c), auth(c), tokens.refresh_token!, options(door, DPoP)));
    expect(refreshed.token_type).toBe('dpop');
    expect(await introspectedJkt(door, refreshed.access_token)).toBe(jkt);

    // A thief with the refresh token (and, for the confidential client, its secret) but not the key.
    const countBefore = await t.s.engine.countTokens({ clientId: c.id });
    const bare = await oauth.refreshTokenGrantRequest(as, asClient(c), auth(c), tokens.refresh_token!, options(door));
    await expect(oauth.processRefreshTokenResponse(as, asClient(c), bare)).rejects.toMatchObject({ error: 'invalid_dpop_proof' });
    const otherKey = oauth.DPoP(asClient(c), await oauth.generateKeyPair('ES256'));
    const other = await oauth.refreshTokenGrantRequest(as, asClient(c), auth(c), tokens.refresh_token!, options(door, otherKey));
    await expect(oauth.processRefreshTokenResponse(as, asClient(c), other)).rejects.toMatchObject({ error: 'invalid_dpop_proof' });
    expect(await t.s.engine.countTokens({ clientId: c.id })).toBe(countBefore);
  });
});
