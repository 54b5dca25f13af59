import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dpopKey, makeProof, type DpopKey } from '../helpers/dpop.js';
import { createClient, DOORS, ISSUER, issue, specBasic, startTestServer, type Client, type TestServer } from '../helpers/server.js';

const TOKEN_URL = `${ISSUER}/oauth/token`;

/** DPoP over HTTP (RFC 9449 §5, §8; contract 8), on both doors: the header reaches the engine, the answers carry the wire names. */
describe.each(DOORS)('DPoP at POST /oauth/token (%s)', (door) => {
  let s: TestServer;
  let app: Client;
  let key: DpopKey;
  beforeAll(async () => {
    s = await startTestServer({ door });
    app = await createClient(s.engine, 'dpop-app');
    key = await dpopKey();
  });
  afterAll(() => s.close());

  const proof = (claims: Partial<Parameters<typeof makeProof>[1]> = {}) => makeProof(key, { iatMs: s.clock.now(), htu: TOKEN_URL, ...claims });
  const refresh = (rt: string, headers: Record<string, string> = {}) => s.post('/oauth/token', { grant_type: 'refresh_token', refresh_token: rt }, { authorization: specBasic(app), ...headers });

  it('a good proof: token_type DPoP, and introspection shows cnf.jkt', async () => {
    const issued = await issue(s.engine, app);
    const r = await refresh(issued.refresh_token, { dpop: await proof() });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ token_type: 'DPoP' });
    const seen = await s.post('/oauth/introspection', { token: (r.json as { access_token: string }).access_token, client_id: app.id, client_secret: app.secret! });
    expect(seen.json).toMatchObject({ active: true, cnf: { jkt: key.jkt } });
  });

  it('a bad proof is 400 invalid_dpop_proof in RFC 6749 shape', async () => {
    const issued = await issue(s.engine, app);
    const r = await refresh(issued.refresh_token, { dpop: await proof({ htu: `${ISSUER}/oauth/introspection` }) });
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ error: 'invalid_dpop_proof' });
    expect((r.json as { error_description: string }).error_description).toMatch(/htu/);
  });

  it('the metadata names the proof algorithms', async () => {
    const m = await s.app.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server' });
    expect(m.json()).toMatchObject({ dpop_signing_alg_values_supported: ['ES256', 'RS256', 'PS256', 'EdDSA', 'Ed25519'] });
  });
});

describe.each(DOORS)('DPoP server nonces over HTTP (%s)', (door) => {
  let s: TestServer;
  let app: Client;
  beforeAll(async () => {
    s = await startTestServer({ door, dpopNonceSecret: 'a nonce secret of at least thirty-two characters' });
    app = await createClient(s.engine, 'nonce-app');
  });
  afterAll(() => s.close());

  it('use_dpop_nonce with a DPoP-Nonce header; retried with it, 200 and a nonce for the next proof', async () => {
    const key = await dpopKey();
    const issued = await issue(s.engine, app);
    const ask = async (nonce?: string) =>
      s.post('/oauth/token', { grant_type: 'refresh_token', refresh_token: issued.refresh_token }, { authorization: specBasic(app), dpop: await makeProof(key, { iatMs: s.clock.now(), htu: TOKEN_URL, ...(nonce && { nonce }) }) });
    const first = await ask();
    expect(first.status).toBe(400);
    expect(first.json).toMatchObject({ error: 'use_dpop_nonce' });
    const nonce = first.headers.get('dpop-nonce');
    expect(nonce).toMatch(/^[a-z0-9]+\.[A-Za-z0-9_-]{43}$/);
    const second = await ask(nonce!);
    expect(second.status).toBe(200);
    expect(second.json).toMatchObject({ token_type: 'DPoP' });
    expect(second.headers.get('dpop-nonce')).toBe(nonce);
    // Without a DPoP header nothing changes: a bearer refresh needs no nonce.
    const bearer = await s.post('/oauth/token', { grant_type: 'refresh_token', refresh_token: issued.refresh_token }, { authorization: specBasic(app) });
    expect(bearer.status).toBe(200);
    expect(bearer.headers.get('dpop-nonce')).toBeNull();
  });
});
