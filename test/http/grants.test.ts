import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grantTable, refreshTokenGrant, type Grant } from '../../src/engine/grants/index.js';
import { required } from '../../src/engine/parameters.js';
import { createClient, DOORS, specBasic, startTestServer, type Client, type TestServer } from '../helpers/server.js';

/**
 * The token endpoint dispatches on the engine's grant table, on both doors: a grant registered in
 * a test is served (and listed in the RFC 8414 metadata) without any change to the HTTP layer.
 */
describe.each(DOORS)('POST /oauth/token dispatches on the grant table (%s)', (door) => {
  const fake: Grant = {
    type: 'urn:test:fake',
    parse: (params) => {
      const subject = required(params, 'subject');
      return {
        type: 'urn:test:fake',
        presented: null,
        async exchange(_ctx, client) {
          const result = { access_token: `fake-for-${subject}`, expires_in: 60, jti: 'fake-jti', node: 'n', org_id: 'o', refresh_token: '', scope: '', stime: 0, token_type: 'bearer' as const };
          return { result, clientId: client.id, jti: result.jti, done: { kind: 'refreshed', rotated: false } };
        },
      };
    },
  };
  let s: TestServer;
  let web: Client;
  beforeAll(async () => {
    s = await startTestServer({ door, grants: grantTable(refreshTokenGrant, fake) });
    web = await createClient(s.engine, 'web-app');
    // A client may use the grants it is registered with (RFC 6749 §5.2 unauthorized_client).
    await s.store.updateClientSettings(web.id, { redirectUris: [], grantTypes: ['refresh_token', 'urn:test:fake'], loginProvider: false, requireDpop: false }, {});
  });
  afterAll(() => s.close());

  it('a registered grant answers, for the authenticated client', async () => {
    const r = await s.post('/oauth/token', { grant_type: 'urn:test:fake', subject: 'alice' }, { authorization: specBasic(web) });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ access_token: 'fake-for-alice', jti: 'fake-jti' });
    // Its parameters are checked before the client is: a missing one is 400 whoever asks.
    const missing = await s.post('/oauth/token', { grant_type: 'urn:test:fake' });
    expect(missing.status).toBe(400);
    expect(missing.json).toEqual({ error: 'invalid_request', error_description: 'The parameter subject is missing' });
    const wrong = await s.post('/oauth/token', { grant_type: 'urn:test:fake', subject: 'alice' }, { authorization: specBasic({ id: web.id, secret: 'not-the-password' }) });
    expect(wrong.status).toBe(401);
  });

  it('an unknown grant_type is 400 unsupported_grant_type, naming the grants the table holds', async () => {
    const r = await s.post('/oauth/token', { grant_type: 'password', username: 'a', password: 'b' }, { authorization: specBasic(web) });
    expect(r.status).toBe(400);
    expect(r.json).toEqual({ error: 'unsupported_grant_type', error_description: 'grant_type "password" is not supported: this endpoint takes grant_type=refresh_token, grant_type=urn:test:fake' });
  });

  it('the metadata lists the table', async () => {
    const r = await s.app.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server' });
    expect(r.json().grant_types_supported).toEqual(['refresh_token', 'urn:test:fake']);
  });
});
