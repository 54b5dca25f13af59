import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DPOP_ALGORITHMS as ENGINE_ALGORITHMS, verifyProof } from '../../src/engine/dpop/index.js';
import { checkProof } from '../../src/resource-server/dpop.js';
import { DpopGuard } from '../../src/resource-server/dpop-guard.js';
import { DPOP_ALGORITHMS } from '../../src/resource-server/index.js';
import { ath, dpopKey, makeProof } from '../helpers/dpop.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * One allow-list of DPoP proof algorithms (RFC 9449 §4.3 point 5): the token endpoint, the
 * metadata's dpop_signing_alg_values_supported and the resource-server module accept the same
 * ones, so that a key that gets a bound token is one the API takes, and no API takes a proof
 * tokenctl would refuse.
 */
const API = 'https://api.example.test/orders';
const TOKEN_URL = 'https://auth.example.test/oauth/token';

describe('the DPoP algorithms', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(() => s.close());

  it('are one list: the engine’s, the metadata’s and the module’s', async () => {
    expect(ENGINE_ALGORITHMS).toBe(DPOP_ALGORITHMS);
    const m = await s.app.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server' });
    expect((m.json() as { dpop_signing_alg_values_supported: string[] }).dpop_signing_alg_values_supported).toEqual([...DPOP_ALGORITHMS]);
    expect(new DpopGuard({ origin: API }).algorithms).toEqual(DPOP_ALGORITHMS);
  });

  const options = { algorithms: DPOP_ALGORITHMS, maxAgeMs: 60_000, maxSkewMs: 5_000 };
  const now = () => Date.now();

  it.each(DPOP_ALGORITHMS.map((alg) => [alg]))('%s: a proof is accepted by the token endpoint and by the module alike', async (alg) => {
    const key = await dpopKey(alg);
    const atToken = await makeProof(key, { iatMs: now(), htu: TOKEN_URL, jti: randomUUID() });
    expect((await verifyProof(atToken, { method: 'POST', url: TOKEN_URL }, now())).jkt).toBe(key.jkt);
    const atApi = await makeProof(key, { iatMs: now(), htm: 'GET', htu: API, ath: ath('tok') });
    expect((await checkProof(atApi, { method: 'GET', url: API, token: 'tok' }, options, now())).jkt).toBe(key.jkt);
  });

  it.each([['ES384'], ['ES512'], ['PS384'], ['PS512'], ['RS384'], ['RS512']])('%s, not in the list: refused by both', async (alg) => {
    const key = await dpopKey(alg);
    const atToken = await makeProof(key, { iatMs: now(), htu: TOKEN_URL });
    await expect(verifyProof(atToken, { method: 'POST', url: TOKEN_URL }, now())).rejects.toMatchObject({ reason: 'alg' });
    const atApi = await makeProof(key, { iatMs: now(), htm: 'GET', htu: API, ath: ath('tok') });
    await expect(checkProof(atApi, { method: 'GET', url: API, token: 'tok' }, options, now())).rejects.toThrow(/alg is not allowed/);
    // Nor may an API configure it: its list is a part of tokenctl's.
    expect(() => new DpopGuard({ origin: API, algorithms: [alg] })).toThrow(/some of tokenctl's DPoP algorithms/);
  });
});
