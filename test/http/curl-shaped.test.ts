import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, issue, rawRequest, startTestServer, type Client, type TestServer } from '../helpers/server.js';

/**
 * Requests written from the spec alone, byte for byte as curl sends them (`curl -d` form bodies,
 * curl's own headers), over a raw TCP connection: no client library shapes anything here.
 */
describe('curl-shaped requests built from the spec', () => {
  let s: TestServer;
  let confidential: Client;
  let pkce: Client;

  beforeAll(async () => {
    s = await startTestServer();
    confidential = await createClient(s.engine, 'shop', { secret: 'p@ss word+/=ü-long' });
    pkce = await createClient(s.engine, 'mobile', { public: true });
  });
  afterAll(() => s?.close());

  /** What `curl -sS -X POST URL [-H 'Authorization: …'] -d a=b -d c=d` writes on the wire. */
  function curl(path: string, params: string[], authorization?: string): string {
    const body = params.join('&');
    return [
      `POST ${path} HTTP/1.1`,
      `Host: 127.0.0.1:${s.port}`,
      'User-Agent: curl/8.5.0',
      'Accept: */*',
      ...(authorization ? [`Authorization: ${authorization}`] : []),
      `Content-Length: ${Buffer.byteLength(body)}`,
      'Content-Type: application/x-www-form-urlencoded',
      'Connection: close',
      '',
      body,
    ].join('\r\n');
  }

  /** Spec part 5, refresh endpoint, table row I and row II, literally. */
  function specClientSecret(clientId: string, password?: string): string {
    if (password === undefined) return Buffer.from(clientId + ':').toString('base64'); // II
    const encodedPassword = Buffer.from(password).toString('base64');
    return Buffer.from(clientId + ':' + encodedPassword).toString('base64'); // I
  }

  it('4.1 scenario I: refresh with Authorization: Basic <client_secret>', async () => {
    const issued = await issue(s.engine, confidential);
    const res = await rawRequest(s.port, curl('/oauth/token', ['grant_type=refresh_token', `refresh_token=${issued.refresh_token}`], 'Basic ' + specClientSecret('shop', 'p@ss word+/=ü-long')));
    expect(res.status, res.body).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers.pragma).toBe('no-cache');
    const body = JSON.parse(res.body);
    expect(Object.keys(body).sort()).toEqual(['access_token', 'expires_in', 'jti', 'node', 'org_id', 'refresh_token', 'scope', 'stime', 'token_type']);
  });

  it('4.1 scenario II: refresh with Authorization: Basic base64(client_id ":")', async () => {
    const issued = await issue(s.engine, pkce);
    const res = await rawRequest(s.port, curl('/oauth/token', ['grant_type=refresh_token', `refresh_token=${issued.refresh_token}`], 'Basic ' + specClientSecret('mobile')));
    expect(res.status, res.body).toBe(200);
    expect(JSON.parse(res.body).token_type).toBe('bearer');
  });

  it('4.3 scenario I: introspection with client_id and the password as is (form-encoded by curl --data-urlencode)', async () => {
    const issued = await issue(s.engine, confidential);
    const res = await rawRequest(
      s.port,
      curl('/oauth/introspection', [`token=${issued.access_token}`, 'token_type_hint=access_token', 'client_id=shop', `client_secret=${encodeURIComponent('p@ss word+/=ü-long')}`]),
    );
    expect(res.status, res.body).toBe(200);
    expect(JSON.parse(res.body)).toMatchObject({ active: true, client_id: 'shop', token_type: 'access_token' });
  });

  it('4.3 scenario II: introspection with client_id only, of the public client’s own token; another client’s is inactive to it', async () => {
    const issued = await issue(s.engine, pkce);
    const res = await rawRequest(s.port, curl('/oauth/introspection', [`token=${issued.refresh_token}`, 'token_type_hint=refresh_token', 'client_id=mobile']));
    expect(res.status, res.body).toBe(200);
    expect(JSON.parse(res.body)).toMatchObject({ active: true, token_type: 'refresh_token', client_id: 'mobile' });
    const others = await issue(s.engine, confidential);
    const theirs = await rawRequest(s.port, curl('/oauth/introspection', [`token=${others.refresh_token}`, 'token_type_hint=refresh_token', 'client_id=mobile']));
    expect(JSON.parse(theirs.body)).toStrictEqual({ active: false });
  });

  it('4.2 scenario I then II: revocation, then the same token again', async () => {
    const mine = await issue(s.engine, confidential);
    const params = [`token=${mine.access_token}`, 'token_type_hint=access_token', 'client_id=shop', `client_secret=${encodeURIComponent('p@ss word+/=ü-long')}`];
    const first = await rawRequest(s.port, curl('/oauth/revocation', params));
    expect(first.status, first.body).toBe(200);
    expect(JSON.parse(first.body)).toEqual({ code: 'token_revoke_success', message: expect.stringContaining(mine.jti) });
    const second = await rawRequest(s.port, curl('/oauth/revocation', params));
    expect(JSON.parse(second.body).code).toBe('token_already_revoked');

    const theirs = await issue(s.engine, pkce);
    const pub = await rawRequest(s.port, curl('/oauth/revocation', [`token=${theirs.refresh_token}`, 'token_type_hint=refresh_token', 'client_id=mobile']));
    expect(JSON.parse(pub.body).code).toBe('token_revoke_success');
  });

  it('7.2 as the spec words it: wrong password on /oauth/revocation', async () => {
    const res = await rawRequest(s.port, curl('/oauth/revocation', ['token=abc', 'token_type_hint=access_token', 'client_id=shop', 'client_secret=wrong']));
    expect(res.status).toBe(401);
    const body = JSON.parse(res.body);
    expect(body).toEqual({ timestamp: expect.stringMatching(/^\d+$/), status: 401, error: 'Unauthorized', message: expect.stringMatching(/incorrect.*shop$/), path: '/oauth/revocation' });
  });

  it('7.1 as the spec words it: an expired refresh token', async () => {
    const issued = await issue(s.engine, confidential, { refreshTtlMs: 1000 });
    s.clock.advance(1000);
    const res = await rawRequest(s.port, curl('/oauth/token', ['grant_type=refresh_token', `refresh_token=${issued.refresh_token}`], 'Basic ' + specClientSecret('shop', 'p@ss word+/=ü-long')));
    expect(res.status).toBe(401);
    const body = JSON.parse(res.body);
    expect(body.error).toBe('invalid_token');
    expect(body.error_description).toMatch(new RegExp(`expired.*${issued.refresh_token}$`));
  });
});
