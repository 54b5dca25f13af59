import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ResourceServer, type HeadersLike, type IntrospectionAnswer } from '../../src/resource-server/index.js';
import { DpopGuard } from '../../src/resource-server/dpop-guard.js';
import { normaliseHtu } from '../../src/resource-server/dpop-rules.js';
import { SeenSet } from '../../src/resource-server/seen-set.js';
import { ath, dpopKey, makeProof, rawProof, type DpopKey, type ProofClaims } from '../helpers/dpop.js';
import { startFakeTransmitter, type FakeTransmitter } from './fake-transmitter.js';

/**
 * The module's DPoP checks (RFC 9449 §4.3, §7.1, §7.2) with proofs made by jose and introspection
 * answers carrying `cnf.jkt` from a transmitter the test controls. Against tokens a real tokenctl
 * binds: dpop-e2e.test.ts.
 */
const API = 'https://api.example.test';
const soon = Math.floor(Date.now() / 1000) + 3600;
const answer = (jti: string, jkt?: string): IntrospectionAnswer => ({
  active: true,
  jti,
  username: 'alice',
  client_id: 'app',
  token_type: 'access_token',
  scope: 'read',
  exp: soon,
  aud: 'rs',
  ...(jkt !== undefined && { cnf: { jkt } }),
});

let fake: FakeTransmitter;
let rs: ResourceServer;
let plain: ResourceServer;
let key: DpopKey;
let other: DpopKey;

beforeAll(async () => {
  fake = await startFakeTransmitter();
  const common = { url: fake.url, clientId: 'rs-client', clientSecret: 's3cret', audience: 'rs', events: false as const };
  rs = new ResourceServer({ ...common, dpop: { origin: API } });
  plain = new ResourceServer(common);
  key = await dpopKey();
  other = await dpopKey('PS256');
  fake.answers.set('tok-bound', answer('j-bound', key.jkt));
  fake.answers.set('tok-plain', answer('j-plain'));
});
afterAll(async () => {
  await rs.close();
  await plain.close();
  await fake.close();
});

const request = (authorization: string | undefined, proof?: string | string[], method = 'GET', url = '/orders?page=2'): HeadersLike => ({
  headers: { ...(authorization !== undefined && { authorization }), ...(proof !== undefined && { dpop: proof }) },
  method,
  url,
});
/** A proof of `k` for GET /orders with `token` (default tok-bound); `header` overrides the protected header's members. */
const proofFor = (k: DpopKey, { token = 'tok-bound', header, ...claims }: Partial<ProofClaims> & { token?: string; header?: Record<string, unknown> } = {}) =>
  makeProof(k, { iatMs: Date.now(), htm: 'GET', htu: `${API}/orders`, ath: ath(token), ...claims }, header);

describe('DPoP at the resource server', () => {
  it('accepts a bound token with a proof of its key, and names the key', async () => {
    const result = await rs.check(request('DPoP tok-bound', await proofFor(key)));
    expect(result).toMatchObject({ ok: true, principal: { username: 'alice', jkt: key.jkt } });
    // A proof of another key type (PS256) for a token bound to it works the same.
    fake.answers.set('tok-ps', answer('j-ps', other.jkt));
    expect((await rs.check(request('DPoP tok-ps', await proofFor(other, { token: 'tok-ps' })))).ok).toBe(true);
  });

  it('refuses a bound token presented as Bearer (RFC 9449 §7.2), with or without dpop configured, and verify() gives nothing for it', async () => {
    for (const server of [rs, plain]) {
      const result = await server.check(request('Bearer tok-bound'));
      expect(result).toMatchObject({ ok: false, refusal: { status: 401, body: { error: 'invalid_token' } } });
    }
    const refused = await rs.check(request('Bearer tok-bound', await proofFor(key)));
    expect(refused.ok).toBe(false);
    expect(await rs.verify('tok-bound')).toBeNull();
    expect(await plain.verify('tok-bound')).toBeNull();
    // An unbound token stays a bearer token.
    expect((await rs.check(request('Bearer tok-plain'))).ok).toBe(true);
  });

  it('answers the refusals with the DPoP challenge and its algs (RFC 9449 §7.1)', async () => {
    const missing = await rs.check(request(undefined));
    expect(missing).toMatchObject({ ok: false, refusal: { status: 401 } });
    if (missing.ok) throw new Error('accepted');
    expect(missing.refusal.challenge).toMatch(/^Bearer, DPoP algs="ES256 [^"]*PS256[^"]*"$/);
    const noProof = await rs.check(request('DPoP tok-bound'));
    if (noProof.ok) throw new Error('accepted');
    expect(noProof.refusal.status).toBe(401);
    expect(noProof.refusal.challenge).toMatch(/^DPoP error="invalid_dpop_proof", error_description="no DPoP proof", algs="[^"]+", Bearer$/);
    const wrongKey = await rs.check(request('DPoP tok-bound', await proofFor(other)));
    if (wrongKey.ok) throw new Error('accepted');
    expect(wrongKey.refusal.challenge).toMatch(/^DPoP error="invalid_token", error_description="the access token is not bound to the key of the DPoP proof"/);
    // Without dpop configured, the challenges are RFC 6750's alone, as before.
    const before = await plain.check(request(undefined));
    if (before.ok) throw new Error('accepted');
    expect(before.refusal.challenge).toBe('Bearer');
  });

  const bad: [string, () => Promise<string | string[]>, string][] = [
    ['a proof for another access token (ath)', () => proofFor(key, { token: 'tok-other' }), 'ath'],
    ['no ath', () => proofFor(key, { omit: ['ath'] }), 'ath'],
    ['another URL (htu)', () => proofFor(key, { htu: 'https://other.example.test/orders' }), 'htu'],
    ['another path (htu)', () => proofFor(key, { htu: `${API}/admin` }), 'htu'],
    ['another method (htm)', () => proofFor(key, { htm: 'POST' }), 'htm'],
    ['an old iat', () => proofFor(key, { iatMs: Date.now() - 120_000 }), 'too old'],
    ['an iat in the future', () => proofFor(key, { iatMs: Date.now() + 60_000 }), 'future'],
    ['no jti', () => proofFor(key, { omit: ['jti'] }), 'jti'],
    ['typ JWT', () => proofFor(key, { header: { typ: 'JWT' } }), 'typ'],
    ['alg none', async () => rawProof({ typ: 'dpop+jwt', alg: 'none', jwk: key.publicJwk }, { jti: 'j-none', htm: 'GET', htu: `${API}/orders`, iat: Math.floor(Date.now() / 1000), ath: ath('tok-bound') }, ''), 'not a JWT'],
    [
      'a symmetric alg (HS256)',
      () =>
        new SignJWT({ jti: 'x', htm: 'GET', htu: `${API}/orders`, iat: Math.floor(Date.now() / 1000) })
          .setProtectedHeader({ typ: 'dpop+jwt', alg: 'HS256', jwk: { kty: 'oct', k: 'c2VjcmV0' } } as never)
          .sign(new TextEncoder().encode('secret')),
      'alg',
    ],
    ['a private key in the header', () => proofFor(key, { header: { jwk: key.privateJwk } }), 'not a public key'],
    ['a signature by another key than the header names', () => proofFor(other, { header: { jwk: key.publicJwk, alg: 'PS256' } }), 'signature'],
    ['two DPoP headers', async () => [await proofFor(key), await proofFor(key)], 'more than one'],
  ];

  it.each(bad)('refuses %s with invalid_dpop_proof, and asks tokenctl nothing', async (_name, make, why) => {
    const before = fake.introspections;
    const result = await rs.check(request('DPoP tok-bound', await make()));
    expect(result).toMatchObject({ ok: false, refusal: { status: 401, body: { error: 'invalid_dpop_proof' } } });
    if (!result.ok) expect(result.refusal.body!.error_description).toContain(why);
    expect(fake.introspections).toBe(before);
  });

  it('refuses a proof used twice within the window (per process), unless the replay check is off', async () => {
    const proof = await proofFor(key);
    expect((await rs.check(request('DPoP tok-bound', proof))).ok).toBe(true);
    expect(await rs.check(request('DPoP tok-bound', proof))).toMatchObject({ ok: false, refusal: { body: { error: 'invalid_dpop_proof', error_description: 'the DPoP proof was used before' } } });
    // Of two requests racing with one proof, exactly one passes.
    const racing = await proofFor(key);
    const results = await Promise.all([rs.check(request('DPoP tok-bound', racing)), rs.check(request('DPoP tok-bound', racing))]);
    expect(results.filter((r) => r.ok)).toHaveLength(1);
    const lax = new ResourceServer({ url: fake.url, clientId: 'rs-client', clientSecret: 's3cret', audience: 'rs', events: false, dpop: { origin: API, replay: false } });
    try {
      expect((await lax.check(request('DPoP tok-bound', proof))).ok).toBe(true);
      expect((await lax.check(request('DPoP tok-bound', proof))).ok).toBe(true);
    } finally {
      await lax.close();
    }
  });

  it('refuses an unbound token presented with DPoP, and an inactive one', async () => {
    expect(await rs.check(request('DPoP tok-plain', await proofFor(key, { token: 'tok-plain' })))).toMatchObject({ ok: false, refusal: { body: { error: 'invalid_token' } } });
    expect(await rs.check(request('DPoP tok-gone', await proofFor(key, { token: 'tok-gone' })))).toMatchObject({ ok: false, refusal: { body: { error: 'invalid_token' } } });
  });

  it('takes Bearer tokens not at all with required, and the URL from the request function behind a proxy', async () => {
    const strict = new ResourceServer({
      url: fake.url,
      clientId: 'rs-client',
      clientSecret: 's3cret',
      audience: 'rs',
      events: false,
      dpop: { required: true, request: (req) => ({ method: String(req.headers['x-original-method']), url: `${API}${String(req.headers['x-original-uri'])}` }) },
    });
    try {
      expect(await strict.check(request('Bearer tok-plain'))).toMatchObject({ ok: false, refusal: { body: { error: 'invalid_token' } } });
      const proxied = { headers: { authorization: 'DPoP tok-bound', dpop: await proofFor(key, { htm: 'DELETE' }), 'x-original-method': 'DELETE', 'x-original-uri': '/orders' }, method: 'GET', url: '/check' };
      expect((await strict.check(proxied)).ok).toBe(true);
    } finally {
      await strict.close();
    }
  });

  it('answers through Node http with authenticate and sendUnauthorized, the challenge on the wire', async () => {
    const server: Server = createServer(async (req, res) => {
      const who = await rs.authenticate(req);
      if (!who) return rs.sendUnauthorized(res, req);
      res.end(who.jkt);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/orders`;
    try {
      const ok = await fetch(url, { headers: { authorization: 'DPoP tok-bound', dpop: await proofFor(key) } });
      expect([ok.status, await ok.text()]).toEqual([200, key.jkt]);
      const stolen = await fetch(url, { headers: { authorization: 'Bearer tok-bound' } });
      expect(stolen.status).toBe(401);
      expect(stolen.headers.get('www-authenticate')).toMatch(/^Bearer error="invalid_token", error_description="the access token is DPoP-bound: present it with its proof", DPoP algs=/);
      const noKey = await fetch(url, { headers: { authorization: 'DPoP tok-bound', dpop: await proofFor(other) } });
      expect(noKey.status).toBe(401);
      expect(((await noKey.json()) as { error: string }).error).toBe('invalid_token');
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});

describe('DPoP helpers', () => {
  it('normalises htu as RFC 3986 §6 says, without query and fragment', () => {
    expect(normaliseHtu('HTTPS://API.Example.TEST:443/a/./b/../c%2f?x=1#f')).toBe('https://api.example.test/a/c%2F');
    expect(normaliseHtu('https://api.example.test/%7Eorders')).toBe('https://api.example.test/~orders');
    expect(normaliseHtu('ftp://x/y')).toBeNull();
    expect(normaliseHtu('/relative')).toBeNull();
  });

  it('keeps the seen-set bounded, dropping the entries nearest to their end first', () => {
    const seen = new SeenSet(3, 60_000);
    const now = 1_000_000_000_000;
    for (let i = 0; i < 5; i++) expect(seen.firstTime(`j${i}`, now, now + 60_000 + i)).toBe(true);
    expect(seen.size).toBe(3);
    expect(seen.firstTime('j4', now)).toBe(false);
    expect(seen.firstTime('j0', now)).toBe(true); // dropped when the set was full
    expect(seen.firstTime('j4', now + 60_004)).toBe(true); // past its end
    // Without an end of its own, an entry lasts the set's ttl.
    expect(seen.firstTime('set-jti', now)).toBe(true);
    expect(seen.firstTime('set-jti', now + 59_999)).toBe(false);
    expect(seen.firstTime('set-jti', now + 60_000)).toBe(true);
  });

  it('remembers a proof by its key and jti until its iat leaves the window', () => {
    const guard = new DpopGuard({ origin: API });
    const now = 1_000_000_000_000;
    const proof = { jkt: 'k', jti: 'j', iat: now / 1000 };
    expect(guard.firstUse(proof, now)).toBe(true);
    expect(guard.firstUse(proof, now + 64_999)).toBe(false);
    expect(guard.firstUse({ ...proof, jkt: 'other-key' }, now)).toBe(true); // another key's jti is its own
    expect(guard.firstUse(proof, now + 65_000)).toBe(true); // 60 s old and 5 s of skew: past the window
  });
});
