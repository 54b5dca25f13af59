import { randomUUID } from 'node:crypto';
import { exportJWK, SignJWT } from 'jose';
import { beforeEach, describe, expect, it } from 'vitest';
import { accessTokenHash, normaliseHtu, htuMatches, type DpopPresentation } from '../../src/engine/dpop/index.js';
import type { Engine } from '../../src/engine/engine.js';
import { InvalidDpopProofError, UseDpopNonceError } from '../../src/engine/errors.js';
import type { ClientOutcome, TokenEndpointResponse, TokenResponse } from '../../src/engine/results.js';
import type { MemoryStore } from '../../src/store/memory/index.js';
import type { ClientRecord } from '../../src/store/store.js';
import type { ManualClock } from '../../src/engine/clock.js';
import { dpopKey, makeProof, rawProof, type DpopKey } from '../helpers/dpop.js';
import { addClient, credentialsOf, issueFor, makeEngine, mustRecordOf, SECOND, settle } from '../helpers/engine.js';

const TOKEN_URL = 'https://auth.example.test/oauth/token';
const at = (header: string | string[] | undefined): DpopPresentation => ({ header, method: 'POST', url: TOKEN_URL });

/** DPoP at the token endpoint (RFC 9449 §4.3, §5, contract 8), against the memory store and a manual clock. */
describe('DPoP proofs at the token endpoint', () => {
  let engine: Engine;
  let store: MemoryStore;
  let clock: ManualClock;
  let app: ClientRecord;
  let key: DpopKey;

  beforeEach(async () => {
    ({ engine, store, clock } = makeEngine());
    app = await addClient(store, { grantTypes: ['refresh_token'] });
    key = await dpopKey();
  });

  const tokens = async () => (await store.stats(clock.now())).tokens;
  const count = async () => {
    const t = await tokens();
    return Object.values(t).reduce((n, s) => n + s.active + s.expired + s.revoked, 0);
  };
  const refresh = (refreshToken: string, dpop?: DpopPresentation): Promise<ClientOutcome<TokenEndpointResponse>> =>
    engine.tokenAsClient({ grant: engine.tokenRequest({ grant_type: 'refresh_token', refresh_token: refreshToken }), credentials: credentialsOf(app), dpop });
  const proof = (claims: Partial<Parameters<typeof makeProof>[1]> = {}, header: Record<string, unknown> = {}, k = key) => makeProof(k, { iatMs: clock.now(), ...claims }, header);

  /** The request is refused with invalid_dpop_proof for `reason`, and nothing is issued. */
  async function refused(dpop: DpopPresentation, reason: string, refreshToken?: string) {
    const rt = refreshToken ?? (await issueFor(engine, app)).refresh_token;
    const before = await count();
    const out = await settle(refresh(rt, dpop));
    expect(out.ok).toBe(false);
    const err = (out as { error: unknown }).error;
    expect(err).toBeInstanceOf(InvalidDpopProofError);
    expect((err as InvalidDpopProofError).code).toBe('invalid_dpop_proof');
    expect((err as InvalidDpopProofError).reason).toBe(reason);
    expect(await count()).toBe(before);
  }

  it('a good proof binds the new access token: token_type DPoP, cnf.jkt in introspection', async () => {
    const issued = await issueFor(engine, app);
    const out = await refresh(issued.refresh_token, at(await proof()));
    const r = out.result as TokenResponse;
    expect(r.token_type).toBe('DPoP');
    expect((await mustRecordOf(store, r.access_token)).jkt).toBe(key.jkt);
    const seen = await engine.introspectAsClient({ credentials: credentialsOf(app), token: r.access_token });
    expect(seen.result).toMatchObject({ active: true, cnf: { jkt: key.jkt } });
    // Without a proof: the spec's bearer, and no cnf.
    const bearer = (await refresh(issued.refresh_token)).result;
    expect(bearer.token_type).toBe('bearer');
    expect((await engine.introspectAsClient({ credentials: credentialsOf(app), token: bearer.access_token })).result).not.toHaveProperty('cnf');
  });

  it('every algorithm of the allow-list verifies (ES256, RS256, PS256, EdDSA)', async () => {
    for (const alg of ['ES256', 'RS256', 'PS256', 'EdDSA']) {
      const k = await dpopKey(alg);
      const issued = await issueFor(engine, app);
      const r = (await refresh(issued.refresh_token, at(await proof({}, {}, k)))).result;
      expect((await mustRecordOf(store, r.access_token)).jkt).toBe(k.jkt);
    }
  });

  it('wrong htu, wrong htm: refused, nothing issued', async () => {
    await refused(at(await proof({ htu: 'https://auth.example.test/oauth/introspection' })), 'htu');
    await refused(at(await proof({ htu: 'https://other.example.test/oauth/token' })), 'htu');
    await refused(at(await proof({ htm: 'GET' })), 'htm');
  });

  it('htu is compared after RFC 3986 §6 normalisation, without query and fragment', async () => {
    expect(normaliseHtu('HTTPS://Auth.Example.TEST:443/oauth/%74oken?x=1#f')).toBe('https://auth.example.test/oauth/token');
    expect(htuMatches('https://auth.example.test/oauth/./token', TOKEN_URL)).toBe(true);
    expect(htuMatches('https://auth.example.test:8443/oauth/token', TOKEN_URL)).toBe(false);
    const issued = await issueFor(engine, app);
    expect((await refresh(issued.refresh_token, at(await proof({ htu: 'https://AUTH.example.test:443/oauth/token?q=1' })))).result.token_type).toBe('DPoP');
  });

  it('a replayed jti is refused, nothing issued', async () => {
    const p = await proof();
    const issued = await issueFor(engine, app);
    await refresh(issued.refresh_token, at(p));
    await refused(at(p), 'replayed', issued.refresh_token);
    // Past its window the same proof is refused for its age, not let through by a forgotten jti.
    clock.advance(70 * SECOND);
    await refused(at(p), 'iat', issued.refresh_token);
  });

  it('an old iat, a future iat: refused; the window is 60 s back and 5 s ahead on the engine clock', async () => {
    await refused(at(await proof({ iatMs: clock.now() - 61 * SECOND })), 'iat');
    await refused(at(await proof({ iatMs: clock.now() + 6 * SECOND })), 'iat');
    const issued = await issueFor(engine, app);
    expect((await refresh(issued.refresh_token, at(await proof({ iatMs: clock.now() - 59 * SECOND })))).result.token_type).toBe('DPoP');
    expect((await refresh(issued.refresh_token, at(await proof({ iatMs: clock.now() + 4 * SECOND })))).result.token_type).toBe('DPoP');
  });

  it('alg none, HS256, a private key in the header, a missing typ, a bad signature: refused', async () => {
    const claims = { htm: 'POST', htu: TOKEN_URL, jti: randomUUID(), iat: Math.floor(clock.now() / 1000) };
    await refused(at(rawProof({ alg: 'none', typ: 'dpop+jwt', jwk: key.publicJwk }, claims, 'AAAA')), 'alg');
    const hs = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'dpop+jwt', jwk: key.publicJwk } as never).sign(new TextEncoder().encode('a shared secret of thirty-two bytes!'));
    await refused(at(hs), 'alg');
    const privateJwk = await exportJWK(key.privateKey);
    await refused(at(await proof({}, { jwk: privateJwk })), 'jwk');
    await refused(at(await proof({}, { jwk: { ...key.publicJwk, p: 'AQAB' } })), 'jwk');
    await refused(at(await proof({}, { typ: undefined })), 'typ');
    await refused(at(await proof({}, { typ: 'JWT' })), 'typ');
    const other = await dpopKey();
    await refused(at(await proof({}, { jwk: other.publicJwk })), 'signature');
    const good = await proof();
    await refused(at(good.slice(0, -4) + (good.endsWith('AAAA') ? 'BBBB' : 'AAAA')), 'signature');
  });

  it('two DPoP headers, an empty one, or one that is no JWT: refused', async () => {
    const p = await proof();
    await refused(at([p, p]), 'multiple');
    await refused(at(`${p}, ${await proof()}`), 'multiple');
    await refused(at('not-a-jwt'), 'malformed');
    await refused(at(''), 'malformed');
  });

  it('a bound refresh token needs a proof by its key: without one, or with another key, nothing is issued', async () => {
    // With rotation, the refresh token a public client obtains with a proof is bound (RFC 9449 §5).
    const rotating = makeEngine({ rotateRefreshTokens: true });
    const c = await addClient(rotating.store, { grantTypes: ['refresh_token'] });
    const issued = await issueFor(rotating.engine, c);
    const first = (await rotating.engine.tokenAsClient({ grant: rotating.engine.tokenRequest({ grant_type: 'refresh_token', refresh_token: issued.refresh_token }), credentials: credentialsOf(c), dpop: at(await makeProof(key, { iatMs: rotating.clock.now() })) })).result as TokenResponse;
    expect((await mustRecordOf(rotating.store, first.refresh_token)).jkt).toBe(key.jkt);
    const again = (dpop?: DpopPresentation) => rotating.engine.tokenAsClient({ grant: rotating.engine.tokenRequest({ grant_type: 'refresh_token', refresh_token: first.refresh_token }), credentials: credentialsOf(c), dpop });
    const countIn = async () => Object.values((await rotating.store.stats(rotating.clock.now())).tokens).reduce((n, s) => n + s.active + s.expired + s.revoked, 0);
    const before = await countIn();
    const stolen = await settle(again());
    expect((stolen as { error: InvalidDpopProofError }).error).toMatchObject({ code: 'invalid_dpop_proof', reason: 'required', message: expect.stringMatching(/^The refresh token is bound to a DPoP key: .*\(RFC 9449 §5\)$/) });
    const wrongKey = await settle(again(at(await makeProof(await dpopKey(), { iatMs: rotating.clock.now() }))));
    expect((wrongKey as { error: InvalidDpopProofError }).error).toMatchObject({ code: 'invalid_dpop_proof', reason: 'key_mismatch', message: expect.stringMatching(/the key the refresh token is bound to \(RFC 9449 §5\)$/) });
    expect(await countIn()).toBe(before);
    // The holder of the key refreshes; the new tokens are bound too.
    const next = (await again(at(await makeProof(key, { iatMs: rotating.clock.now() })))).result as TokenResponse;
    expect(next.token_type).toBe('DPoP');
    expect((await mustRecordOf(rotating.store, next.refresh_token)).jkt).toBe(key.jkt);
    expect((await mustRecordOf(rotating.store, next.access_token)).jkt).toBe(key.jkt);
  });

  it('a bound refresh token refused to the operator too (local refresh holds no key)', async () => {
    const rotating = makeEngine({ rotateRefreshTokens: true });
    const c = await addClient(rotating.store, { grantTypes: ['refresh_token'] });
    const issued = await issueFor(rotating.engine, c);
    const bound = (await rotating.engine.tokenAsClient({ grant: rotating.engine.tokenRequest({ grant_type: 'refresh_token', refresh_token: issued.refresh_token }), credentials: credentialsOf(c), dpop: at(await makeProof(key, { iatMs: rotating.clock.now() })) })).result as TokenResponse;
    await expect(rotating.engine.refreshAsOperator(bound.refresh_token)).rejects.toBeInstanceOf(InvalidDpopProofError);
  });

  it('client credentials binds what it mints (the code grant: test/interop/dpop.test.ts)', async () => {
    const made = await engine.createClient({ name: 'cron', grantTypes: ['client_credentials'], scope: 'read' }, 'cli:test');
    const out = await engine.tokenAsClient({
      grant: engine.tokenRequest({ grant_type: 'client_credentials' }),
      credentials: credentialsOf({ id: made.client.client_id }, made.client_secret!),
      dpop: at(await proof()),
    });
    expect(out.result.token_type).toBe('DPoP');
    expect((await mustRecordOf(store, out.result.access_token)).jkt).toBe(key.jkt);
  });

  it('a client created with requireDpop is refused without a proof, invalid_dpop_proof, nothing issued', async () => {
    const strict = await addClient(store, { id: 'strict', requireDpop: true, grantTypes: ['refresh_token'] });
    const issued = await issueFor(engine, strict);
    const before = await count();
    const out = await settle(engine.tokenAsClient({ grant: engine.tokenRequest({ grant_type: 'refresh_token', refresh_token: issued.refresh_token }), credentials: credentialsOf(strict) }));
    expect((out as { error: InvalidDpopProofError }).error).toMatchObject({ code: 'invalid_dpop_proof', reason: 'required' });
    expect(await count()).toBe(before);
    const ok = await engine.tokenAsClient({ grant: engine.tokenRequest({ grant_type: 'refresh_token', refresh_token: issued.refresh_token }), credentials: credentialsOf(strict), dpop: at(await proof()) });
    expect(ok.result.token_type).toBe('DPoP');
  });

  it('ath is the base64url SHA-256 of the access token (RFC 9449 §4.2)', () => {
    // The example of RFC 9449 §7.1.
    expect(accessTokenHash('Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU')).toBe('fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo');
  });
});

describe('DPoP server nonces (RFC 9449 §8)', () => {
  const secret = 'a nonce secret of at least thirty-two characters';

  it('a proof without the nonce is use_dpop_nonce with a fresh one; with it, the answer carries the next', async () => {
    const { engine, store, clock } = makeEngine({ dpopNonceSecret: secret });
    const app = await addClient(store, { grantTypes: ['refresh_token'] });
    const key = await dpopKey();
    const issued = await issueFor(engine, app);
    const ask = (dpop: DpopPresentation) => engine.tokenAsClient({ grant: engine.tokenRequest({ grant_type: 'refresh_token', refresh_token: issued.refresh_token }), credentials: credentialsOf(app), dpop });
    const first = await settle(ask(at(await makeProof(key, { iatMs: clock.now() }))));
    const err = (first as { error: UseDpopNonceError }).error;
    expect(err).toBeInstanceOf(UseDpopNonceError);
    expect(err.code).toBe('use_dpop_nonce');
    const ok = await ask(at(await makeProof(key, { iatMs: clock.now(), nonce: err.nonce })));
    expect(ok.result.token_type).toBe('DPoP');
    expect(ok.dpopNonce).toBe(err.nonce);
    // Another engine (another node) with the same secret accepts it; one slot later too, two not.
    const other = makeEngine({ dpopNonceSecret: secret, store, clock });
    const viaOther = (dpop: DpopPresentation) => other.engine.tokenAsClient({ grant: other.engine.tokenRequest({ grant_type: 'refresh_token', refresh_token: issued.refresh_token }), credentials: credentialsOf(app), dpop });
    expect((await viaOther(at(await makeProof(key, { iatMs: clock.now(), nonce: err.nonce })))).result.token_type).toBe('DPoP');
    clock.advance(60 * SECOND);
    expect((await viaOther(at(await makeProof(key, { iatMs: clock.now(), nonce: err.nonce })))).result.token_type).toBe('DPoP');
    clock.advance(60 * SECOND);
    await expect(viaOther(at(await makeProof(key, { iatMs: clock.now(), nonce: err.nonce })))).rejects.toBeInstanceOf(UseDpopNonceError);
    // A forged nonce, or one made with another secret, is no nonce.
    const stranger = makeEngine({ dpopNonceSecret: 'another secret of at least thirty-two characters', store, clock });
    const foreign = await settle(stranger.engine.tokenAsClient({ grant: stranger.engine.tokenRequest({ grant_type: 'refresh_token', refresh_token: issued.refresh_token }), credentials: credentialsOf(app), dpop: at(await makeProof(key, { iatMs: clock.now() })) }));
    const foreignNonce = (foreign as { error: UseDpopNonceError }).error.nonce;
    await expect(viaOther(at(await makeProof(key, { iatMs: clock.now(), nonce: foreignNonce })))).rejects.toBeInstanceOf(UseDpopNonceError);
  });

  it('a short secret is refused when the engine is made', () => {
    expect(() => makeEngine({ dpopNonceSecret: 'short' })).toThrow(/at least 32/);
  });
});
