import { describe, expect, it } from 'vitest';
import { InvalidRequestError, UnsupportedGrantTypeError } from '../../src/engine/errors.js';
import { GRANTS, grantTable, parseTokenRequest, refreshTokenGrant, type Grant } from '../../src/engine/grants/index.js';
import { required } from '../../src/engine/parameters.js';
import { addClient, credentialsOf, issueFor, makeEngine } from '../helpers/engine.js';

/**
 * The token endpoint's grant table (engine/grants/): grant_type selects a row, the row reads its
 * parameters before the client is authenticated, names the token read with the client, and makes
 * the exchange.
 */
describe('the grant table', () => {
  /** A grant of a test's own: presents `assertion`, and answers with what it was handed. */
  const seen: { client: string; found: string | null; presentedAt: number }[] = [];
  const echo: Grant = {
    type: 'urn:test:echo',
    parse: (params) => {
      const assertion = required(params, 'assertion');
      return {
        type: 'urn:test:echo',
        presented: assertion,
        async exchange(_ctx, client, found, presentedAt) {
          seen.push({ client: client.id, found: found?.jti ?? null, presentedAt });
          return { result: { access_token: 'echo', expires_in: 1, jti: 'j', node: 'n', org_id: 'o', refresh_token: '', scope: '', stime: 0, token_type: 'bearer' }, clientId: client.id, jti: 'j', done: { kind: 'refreshed', rotated: false } };
        },
      };
    },
  };

  it('serves the code flow, refresh and client credentials by default, and nothing else', () => {
    expect([...GRANTS.keys()]).toEqual(['authorization_code', 'refresh_token', 'client_credentials']);
    expect(GRANTS.get('refresh_token')).toBe(refreshTokenGrant);
    expect(makeEngine().engine.grantTypes()).toEqual(['authorization_code', 'refresh_token', 'client_credentials']);
  });

  it('a missing grant_type is invalid_request; one not in the table is unsupported_grant_type, naming those that are', () => {
    expect(() => parseTokenRequest(GRANTS, {})).toThrow(InvalidRequestError);
    expect(() => parseTokenRequest(GRANTS, { grant_type: '' })).toThrow(/grant_type is missing/);
    const err = (() => {
      try {
        parseTokenRequest(grantTable(refreshTokenGrant, echo), { grant_type: 'password' });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(UnsupportedGrantTypeError);
    expect((err as Error).message).toBe('grant_type "password" is not supported: this endpoint takes grant_type=refresh_token, grant_type=urn:test:echo');
    expect(() => parseTokenRequest(GRANTS, { grant_type: 'password' })).toThrow(/^grant_type "password" is not supported: this endpoint takes grant_type=authorization_code, grant_type=refresh_token, grant_type=client_credentials$/);
  });

  it("a row reads its own parameters before anything else: a missing one is invalid_request naming it", () => {
    expect(() => parseTokenRequest(GRANTS, { grant_type: 'refresh_token' })).toThrow(/The parameter refresh_token is missing/);
    const parsed = parseTokenRequest(GRANTS, { grant_type: 'refresh_token', refresh_token: 'tcr_x', scope: '' });
    expect(parsed).toMatchObject({ type: 'refresh_token', presented: 'tcr_x' });
  });

  it('a grant registered in the engine is dispatched to: the client authenticated, the presented token read with it', async () => {
    const { engine, store } = makeEngine({ grants: grantTable(refreshTokenGrant, echo) });
    // A client may use the grants it is registered with (RFC 6749 §5.2 unauthorized_client).
    const app = await addClient(store, { grantTypes: ['refresh_token', 'urn:test:echo'] });
    const issued = await issueFor(engine, app);
    expect(engine.grantTypes()).toEqual(['refresh_token', 'urn:test:echo']);
    const grant = engine.tokenRequest({ grant_type: 'urn:test:echo', assertion: issued.refresh_token });
    const o = await engine.tokenAsClient({ grant, credentials: credentialsOf(app) });
    expect(o).toMatchObject({ result: { access_token: 'echo' }, clientId: 'app' });
    expect(seen.at(-1)).toMatchObject({ client: 'app', found: expect.any(String) });
    // An unknown presented token reaches the grant as null: the grant decides what that means.
    await engine.tokenAsClient({ grant: engine.tokenRequest({ grant_type: 'urn:test:echo', assertion: 'not-a-token' }), credentials: credentialsOf(app) });
    expect(seen.at(-1)).toMatchObject({ found: null });
    // The default engine does not know it.
    expect(() => makeEngine().engine.tokenRequest({ grant_type: 'urn:test:echo', assertion: 'x' })).toThrow(UnsupportedGrantTypeError);
  });

  it('refresh_token through the table is the refresh of spec 4.1', async () => {
    const { engine, store } = makeEngine();
    const app = await addClient(store);
    const issued = await issueFor(engine, app);
    const o = await engine.tokenAsClient({ grant: engine.tokenRequest({ grant_type: 'refresh_token', refresh_token: issued.refresh_token, scope: 'read' }), credentials: credentialsOf(app) });
    expect(o).toMatchObject({ result: { refresh_token: issued.refresh_token, scope: 'read' }, clientId: 'app', done: { kind: 'refreshed', rotated: false } });
  });
});
