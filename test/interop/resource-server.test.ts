import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import tokenIntrospection from 'token-introspection';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '../helpers/server.js';
import { startInteropServer, type InteropServer } from './interop-server.js';

/**
 * A resource server that validates bearer tokens by introspection, with the npm library
 * token-introspection 3 configured as its README says: `endpoint`, `client_id`, `client_secret`,
 * and `fetch` (here one that trusts the development certificate). It keeps no cache: every
 * request is one introspection, so a revocation is refused on the very next request. It sends
 * Basic `base64(id ":" secret)` with no encoding at all and never a token_type_hint.
 *
 * The API is the few lines its README leads to: `Authorization: Bearer <token>` in, 200 with the
 * token's user or 401 with an RFC 6750 challenge out.
 */
describe('a resource server on token-introspection 3 (no cache) against tokenctl over HTTPS', () => {
  let t: InteropServer;
  let api: Server;
  let apiUrl: string;
  let introspectAs: (c: Client) => ReturnType<typeof tokenIntrospection>;

  beforeAll(async () => {
    t = await startInteropServer();
    introspectAs = (c) =>
      tokenIntrospection({
        endpoint: `${t.url}/oauth/introspection`,
        client_id: c.id,
        client_secret: c.secret!,
        fetch: t.fetch as unknown as NonNullable<Parameters<typeof tokenIntrospection>[0]>['fetch'],
      });
    const introspect = introspectAs(t.api);
    api = createServer((req, res) => {
      const bearer = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
      if (bearer === undefined) {
        res.writeHead(401, { 'www-authenticate': 'Bearer' }).end();
        return;
      }
      introspect(bearer).then(
        (info) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ user: info.username, scope: info.scope })),
        (err: Error) => {
          const inactive = err instanceof tokenIntrospection.errors.TokenNotActiveError;
          res.writeHead(inactive ? 401 : 502, inactive ? { 'www-authenticate': 'Bearer error="invalid_token"' } : {}).end(err.name);
        },
      );
    });
    await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
    apiUrl = `http://127.0.0.1:${(api.address() as AddressInfo).port}/orders`;
  });
  afterAll(async () => {
    await new Promise((resolve) => api?.close(resolve));
    await t?.close();
  });

  const call = (token: string) => fetch(apiUrl, { headers: { authorization: `Bearer ${token}` } });

  it('an active access token is accepted, and the API sees its user and scope', async () => {
    const issued = await t.grant(t.web);
    const r = await call(issued.access_token);
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ user: 'alice', scope: 'read write' });
  });

  it('a token revoked by its client (RFC 7009, no hint) is refused on the very next request', async () => {
    const issued = await t.grant(t.web);
    expect((await call(issued.access_token)).status).toBe(200);
    const revoked = await t.fetch(`${t.url}/oauth/revocation`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: issued.refresh_token, client_id: t.web.id, client_secret: t.web.secret! }).toString(),
    });
    expect(await revoked.json()).toMatchObject({ code: 'token_revoke_success' });
    const r = await call(issued.access_token);
    expect(r.status).toBe(401);
    expect(r.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
  });

  it('an expired token and a token never issued are refused', async () => {
    const issued = await t.shortLived(t.web);
    expect((await t.afterExpiry(() => call(issued.access_token))).status).toBe(401);
    expect((await call('tca_' + 'A'.repeat(43))).status).toBe(401);
  });

  it('a refresh token presented as a bearer token is active to introspection: the API must check token_type itself', async () => {
    const info = await introspectAs(t.api)((await t.grant(t.web)).refresh_token);
    expect(info).toMatchObject({ active: true, token_type: 'refresh_token' });
  });

  it('its Basic header, unencoded, works with a secret holding : + % and spaces', async () => {
    const issued = await t.grant(t.web);
    expect(await introspectAs(t.odd)(issued.access_token)).toMatchObject({ active: true, jti: issued.jti });
  });

  it('spec 7.2, wrong credentials: an IntrospectionError whose message carries the status and the 7.2 record', async () => {
    const err = await introspectAs({ id: t.api.id, secret: 'not-the-secret-123' })((await t.grant(t.web)).access_token).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(tokenIntrospection.errors.IntrospectionError);
    expect((err as Error).message).toMatch(/401/);
    expect((err as Error).message).toContain(`The client account or password is incorrect: ${t.api.id}`);
  });
});
