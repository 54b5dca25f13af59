import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ResourceServer } from '../../src/resource-server/index.js';
import { startInteropServer, type InteropServer } from './interop-server.js';

/**
 * openid-client 6 with DPoP as its documentation says (`randomDPoPKeyPair`, `getDPoPHandle`,
 * passed to `refreshTokenGrant` and `fetchProtectedResource`): it refreshes a grant into a
 * DPoP-bound token at tokenctl and calls an API protected by the resource-server module, neither
 * changed for the other. The same token without the library's key is refused by the API.
 */
describe('openid-client 6 with DPoP: tokenctl and an API on tokenctl/resource-server', () => {
  let t: InteropServer;
  let rs: ResourceServer;
  let api: Server;
  let apiUrl: string;

  beforeAll(async () => {
    t = await startInteropServer();
    // Proofs carry the real time; the interop server's clock starts in the past.
    t.s.clock.set(Date.now());
    api = createServer(async (req, res) => {
      const who = await rs.authenticate(req).catch(() => undefined);
      if (who === undefined) return void res.writeHead(503).end();
      if (!who) return rs.sendUnauthorized(res, req);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ user: who.username, jkt: who.jkt }));
    });
    await new Promise<void>((r) => api.listen(0, '127.0.0.1', r));
    apiUrl = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
    rs = new ResourceServer({ url: t.url, ca: t.ca, clientId: t.api.id, clientSecret: t.api.secret!, events: false, dpop: { origin: apiUrl } });
  });
  afterAll(async () => {
    await rs?.close();
    await new Promise((r) => api?.close(r));
    await t?.close();
  });

  it.each([
    ['a public client', () => t.spa],
    ['a confidential client', () => t.web],
  ])('%s refreshes into a bound token and calls the API with its proofs', async (_name, who) => {
    const c = who();
    const config = await client.discovery(new URL(t.url), c.id, c.secret ?? undefined, c.secret === null ? client.None() : undefined, {
      algorithm: 'oauth2',
      // tokenctl over HTTPS with its development certificate, the API over plain http on loopback.
      [client.customFetch]: (url: string, options: RequestInit) => (url.startsWith('https:') ? t.fetch(url, options) : fetch(url, options)),
    });
    client.allowInsecureRequests(config); // the API listens on plain http on loopback
    const keyPair = await client.randomDPoPKeyPair();
    const DPoP = client.getDPoPHandle(config, keyPair);
    const issued = await t.grant(c);
    const tokens = await client.refreshTokenGrant(config, issued.refresh_token, undefined, { DPoP });
    expect(tokens.token_type.toLowerCase()).toBe('dpop');

    const answer = await client.fetchProtectedResource(config, tokens.access_token, new URL(`${apiUrl}/orders?page=1`), 'GET', undefined, undefined, { DPoP });
    expect(answer.status).toBe(200);
    const body = (await answer.json()) as { user: string; jkt: string };
    expect(body.user).toBe('alice');
    expect(body.jkt).toMatch(/^[A-Za-z0-9_-]{43}$/);

    // Again with the same key, a second refresh and a second call: each proof is new.
    const again = await client.refreshTokenGrant(config, tokens.refresh_token ?? issued.refresh_token, undefined, { DPoP });
    expect((await client.fetchProtectedResource(config, again.access_token, new URL(`${apiUrl}/orders`), 'POST', undefined, undefined, { DPoP })).status).toBe(200);

    // The token without the key: as a bearer token, and with another key's proofs. The library
    // throws on a 401 with a challenge; the challenge is the API's.
    const refused = async (DPoP?: client.DPoPHandle) => {
      const err = (await client.fetchProtectedResource(config, again.access_token, new URL(`${apiUrl}/orders`), 'GET', undefined, undefined, DPoP && { DPoP }).catch((e: unknown) => e)) as client.WWWAuthenticateChallengeError;
      expect(err).toBeInstanceOf(client.WWWAuthenticateChallengeError);
      expect(err.response.status).toBe(401);
      return err.cause.map((c) => [c.scheme, c.parameters.error]);
    };
    expect(await refused()).toContainEqual(['bearer', 'invalid_token']);
    expect(await refused(client.getDPoPHandle(config, await client.randomDPoPKeyPair()))).toContainEqual(['dpop', 'invalid_token']);
  });
});
