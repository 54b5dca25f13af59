import { compactVerify, createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { describe, expect, it, vi } from 'vitest';
import { KEY_ROTATION_MS, keyRotationAudit, newSigningKey, RETIRED_KEY_PUBLISHED_MS, signingKeyViews } from '../../src/engine/signing-keys.js';
import { KeyRotationError, SigningKeys } from '../../src/events/keys.js';
import { revocationClaim, setClaims, setClaimsJson, signSet, TOKENS_REVOKED } from '../../src/events/set.js';
import { eventOfClaim, revocationClaimJson, withPreparedRevocations } from '../../src/store/revocation-claims.js';
import { MemoryStore } from '../../src/store/memory/index.js';
import type { RevocationEvent } from '../../src/store/store.js';

const T0 = Date.UTC(2026, 0, 1);
const DAY = 86_400_000;

const grant: RevocationEvent = { id: 'e-1', at: T0 - 1_500, reason: 'reuse_detected', scope: 'grant', jti: 'j-1', tokenType: 'refresh_token', grantId: 'g-1', username: 'alice', clientId: 'app' };
/** Three revocations that committed together, oldest first. */
const three: RevocationEvent[] = [
  { id: 'e-0', at: T0 - 3_000, reason: 'revoked', scope: 'token', jti: 'j-2', tokenType: 'access_token', grantId: 'g-2', username: 'ann', clientId: 'app' },
  { ...grant, id: 'e-1b' },
  { id: 'e-2', at: T0 - 100, reason: 'revoked', scope: 'user', username: 'bob' },
];

const one = (event: RevocationEvent) => ({ id: event.id, events: [event] });

describe('SET claims (batch-wire format)', () => {
  it('one revocation: jti the delivery id, toe its time, sub_id by scope, snake_case members and at in ms', () => {
    expect(setClaims(one(grant), 'https://iss', 'aud-1', T0)).toEqual({
      iss: 'https://iss',
      iat: T0 / 1000,
      jti: 'e-1',
      aud: 'aud-1',
      toe: Math.floor((T0 - 1_500) / 1000),
      txn: 'e-1',
      sub_id: { format: 'opaque', id: 'g-1' },
      events: {
        [TOKENS_REVOKED]: {
          revocations: [{ scope: 'grant', reason: 'reuse_detected', jti: 'j-1', token_type: 'refresh_token', grant_id: 'g-1', username: 'alice', client_id: 'app', at: T0 - 1_500 }],
        },
      },
    });
    expect(setClaims(one({ id: 'e', at: T0, reason: 'revoked', scope: 'user', username: 'bob' }), 'i', 'a', T0).sub_id?.id).toBe('bob');
    expect(setClaims(one({ id: 'e', at: T0, reason: 'client_deleted', scope: 'client', clientId: 'c' }), 'i', 'a', T0).events[TOKENS_REVOKED]).toEqual({
      revocations: [{ scope: 'client', reason: 'client_deleted', client_id: 'c', at: T0 }],
    });
    expect(setClaims(one({ ...grant, scope: 'token', tokenType: 'access_token' }), 'i', 'a', T0).sub_id?.id).toBe('j-1');
  });

  it('several revocations: all of them oldest first, toe the latest, sub_id the opaque txn; none is an error', () => {
    const claims = setClaims({ id: 'e-1', events: three }, 'i', 'a', T0);
    expect(claims.jti).toBe('e-1');
    expect(claims.txn).toBe('e-1');
    expect(claims.toe).toBe(Math.floor(three[2]!.at / 1000));
    expect(claims.sub_id).toEqual({ format: 'opaque', id: 'e-1' });
    expect(claims.events[TOKENS_REVOKED]!.revocations.map((r) => [r.scope, r.at])).toEqual(three.map((e) => [e.scope, e.at]));
    expect(() => setClaims({ id: 'e-0', events: [] }, 'i', 'a', T0)).toThrow(/no events/);
  });

  it('a delivery whose store prepared its revocations as JSON: the same claims, byte for byte, as from its events', () => {
    const plain = { id: 'e-0..e-2', events: three };
    // In pieces, as a store's rows hold them: two revocations in the first, one in the second.
    const [a, b, c] = three.map((e) => JSON.stringify(revocationClaim(e)));
    const prepared = withPreparedRevocations({ ...plain }, { parts: [Buffer.from(`${a},${b}`), Buffer.from(c!)], count: 3, latestAt: T0 - 100 });
    expect(setClaimsJson(prepared, 'https://iss/"x"', 'aud-ü', T0 + 999)).toBe(JSON.stringify(setClaims(plain, 'https://iss/"x"', 'aud-ü', T0 + 999)));
    expect(setClaimsJson(plain, 'i', 'a', T0)).toBe(JSON.stringify(setClaims(plain, 'i', 'a', T0)));
    // The prepared text is what goes out (the events are not read again), and it is not part of the delivery's value.
    const other = withPreparedRevocations({ ...plain }, { parts: [Buffer.from(JSON.stringify(revocationClaim(grant)) + ',' + JSON.stringify(revocationClaim(grant)))], count: 2, latestAt: grant.at });
    expect(JSON.parse(setClaimsJson(other, 'i', 'a', T0)).events[TOKENS_REVOKED].revocations).toHaveLength(2);
    expect(other).toEqual(plain);
    // One revocation goes the way of its events (sub_id).
    const single = withPreparedRevocations(one(grant), { parts: [Buffer.from(JSON.stringify(revocationClaim(grant)))], count: 1, latestAt: grant.at });
    expect(JSON.parse(setClaimsJson(single, 'i', 'a', T0)).sub_id).toEqual({ format: 'opaque', id: 'g-1' });
  });

  it('a revocation leaves out what goes without saying: reason revoked, and the token type of a token event (always an access token)', () => {
    const [token, , user] = three.map(revocationClaim);
    expect(token).toEqual({ scope: 'token', jti: 'j-2', grant_id: 'g-2', username: 'ann', client_id: 'app', at: T0 - 3_000 });
    expect(JSON.stringify(token)).not.toMatch(/reason|token_type/);
    expect(user).toEqual({ scope: 'user', username: 'bob', at: T0 - 100 });
    // Said when it is not the usual: another reason, a grant's token type, a token event of a refresh token.
    expect(revocationClaim(grant)).toMatchObject({ reason: 'reuse_detected', token_type: 'refresh_token' });
    expect(revocationClaim({ ...grant, reason: 'revoked', tokenType: 'access_token' })).toMatchObject({ token_type: 'access_token' });
    expect(revocationClaim({ ...three[0]!, tokenType: 'refresh_token' })).toMatchObject({ token_type: 'refresh_token' });
    // Read back, the event is whole again.
    for (const e of [...three, grant]) expect(eventOfClaim(e.id, JSON.parse(JSON.stringify(revocationClaim(e))))).toEqual(e);
    // A claim of an earlier build, with every member, reads the same.
    expect(eventOfClaim('e-0', { scope: 'token', reason: 'revoked', jti: 'j-2', token_type: 'access_token', grant_id: 'g-2', username: 'ann', client_id: 'app', at: T0 - 3_000 })).toEqual(three[0]);
  });

  it('revocationClaimJson writes the text of JSON.stringify(revocationClaim(event)), byte for byte, whatever the strings hold', () => {
    const strings = ['', 'alice', 'user01234', '019ab2c3-b59e-7a0c-b5cb-ab3ac552168f', 'a"b', 'back\\slash', 'tab\tnew\nline', '\u0000\u001f', 'del\u007f', 'ümlaut', '日本', 'emoji 😀', 'lone \ud800 surrogate', '</script>', " !#$%&'()*+,-./:;<=>?@[]^_`{|}~"];
    const events: RevocationEvent[] = [...three, grant];
    for (const [i, s] of strings.entries()) {
      events.push({ id: `e-${i}`, at: T0 + i, reason: 'revoked', scope: 'token', jti: s, tokenType: 'access_token', grantId: s, username: s, clientId: s });
      events.push({ id: `u-${i}`, at: i, reason: 'client_deleted', scope: 'user', username: s, clientId: s });
      events.push({ id: `g-${i}`, at: Number.MAX_SAFE_INTEGER - i, reason: 'reuse_detected', scope: 'grant', jti: s, tokenType: 'refresh_token', grantId: s });
    }
    events.push({ id: 'c', at: 0, reason: 'revoked', scope: 'client', clientId: 'c' });
    for (const e of events) expect(revocationClaimJson(e)).toBe(JSON.stringify(revocationClaim(e)));
    // The SET writer writes a delivery's revocations with it too, one (with its sub_id) or several.
    for (const e of events) expect(setClaimsJson(one(e), 'i', 'a', T0)).toBe(JSON.stringify(setClaims(one(e), 'i', 'a', T0)));
    expect(setClaimsJson({ id: 'all', events }, 'https://iss/ü', 'a"b', T0)).toBe(JSON.stringify(setClaims({ id: 'all', events }, 'https://iss/ü', 'a"b', T0)));
    expect(() => setClaimsJson({ id: 'none', events: [] }, 'i', 'a', T0)).toThrow(/no events/);
  });

  it('a delivery of 3 revocations signed: verified by jose against the served JWKS, ES256 and secevent+jwt', async () => {
    const store = new MemoryStore();
    const keys = new SigningKeys(store, () => T0);
    await keys.ensureCurrent();
    const set = await signSet({ id: three[0]!.id, events: three }, 'https://iss.example', 'https://rs.example', await keys.current(), T0);
    const jwks = createLocalJWKSet(JSON.parse(JSON.stringify(await keys.jwks())));
    const { payload, protectedHeader } = await jwtVerify(set, jwks, { issuer: 'https://iss.example', audience: 'https://rs.example', typ: 'secevent+jwt', algorithms: ['ES256'], currentDate: new Date(T0) });
    expect(protectedHeader).toEqual({ alg: 'ES256', kid: (await keys.current()).kid, typ: 'secevent+jwt' });
    expect(payload).toEqual({
      iss: 'https://iss.example',
      iat: T0 / 1000,
      jti: three[0]!.id,
      aud: 'https://rs.example',
      toe: Math.floor((T0 - 100) / 1000),
      txn: three[0]!.id,
      sub_id: { format: 'opaque', id: three[0]!.id },
      events: {
        [TOKENS_REVOKED]: {
          revocations: [
            { scope: 'token', jti: 'j-2', grant_id: 'g-2', username: 'ann', client_id: 'app', at: T0 - 3_000 },
            { scope: 'grant', reason: 'reuse_detected', jti: 'j-1', token_type: 'refresh_token', grant_id: 'g-1', username: 'alice', client_id: 'app', at: T0 - 1_500 },
            { scope: 'user', username: 'bob', at: T0 - 100 },
          ],
        },
      },
    });
  });
});

describe('signing keys', () => {
  it('one current key at start, however many processes ask at once; kid is the JWK thumbprint', async () => {
    const store = new MemoryStore();
    const kids = await Promise.all([1, 2, 3].map(() => new SigningKeys(store, () => T0).ensureCurrent()));
    expect(new Set(kids).size).toBe(1);
    expect(await store.listSigningKeys()).toHaveLength(1);
    expect(kids[0]).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('rotation: the new key signs, the old one stays in the JWKS 7 days, then is deleted; at 90 days it rotates by itself', async () => {
    const store = new MemoryStore();
    let now = T0;
    const keys = new SigningKeys(store, () => now, (key) => keyRotationAudit('serve:n1', key, now));
    // The store's audit log holds the rotations by itself: the line is written with the key.
    const rotatedByItself = async () => (await store.listAudit({})).map((a) => [a.actor, a.action, a.target, a.detail]);
    const list = () => signingKeyViews(store, now);
    const first = await keys.ensureCurrent();
    const oldSet = await signSet(one(grant), 'i', 'a', await keys.current(), now);
    now += DAY;
    const rotatedKey = await newSigningKey(now);
    await store.addSigningKey(rotatedKey, undefined, {}); // an operator's rotation (signing-key rotate; unconditional)
    const second = rotatedKey.kid;
    const newSet = await signSet(one(grant), 'i', 'a', await keys.current(), now);
    expect(decodeProtectedHeader(newSet).kid).toBe(second);
    const jwks = await keys.jwks();
    expect(jwks.keys.map((k) => k.kid)).toEqual([second, first]);
    for (const k of jwks.keys) expect(k).not.toHaveProperty('d');
    for (const set of [oldSet, newSet]) await compactVerify(set, createLocalJWKSet(jwks));

    now += RETIRED_KEY_PUBLISHED_MS + 1;
    expect((await keys.jwks()).keys.map((k) => k.kid)).toEqual([second]);
    expect(await keys.maintain()).toBe(1);
    expect((await list()).map((k) => k.kid)).toEqual([second]);
    // The first key and an asked-for rotation are not rotations by itself (serve audits those).
    expect(await rotatedByItself()).toEqual([]);

    now = T0 + DAY + KEY_ROTATION_MS - 1; // the second key was made at T0 + DAY
    expect(await keys.ensureCurrent()).toBe(second);
    now += 1;
    const third = await keys.ensureCurrent();
    expect(third).not.toBe(second);
    expect((await list()).map((k) => [k.kid, k.current])).toEqual([
      [third, true],
      [second, false],
    ]);
    expect(await rotatedByItself()).toEqual([['serve:n1', 'signing_key.rotate', `key:${third}`, 'ES256']]);
    expect(await keys.ensureCurrent()).toBe(third);
    expect((await rotatedByItself()).length).toBe(1);
  });

  it('a rotation the store refuses is a KeyRotationError: the old key stays current and signs, no audit line, and the next try rotates', async () => {
    const store = new MemoryStore();
    let now = T0;
    const keys = new SigningKeys(store, () => now, (key) => keyRotationAudit('serve:n1', key, now));
    const first = await keys.ensureCurrent();
    now += KEY_ROTATION_MS;
    vi.spyOn(store, 'addSigningKey').mockRejectedValueOnce(new Error('the store is unavailable'));
    const err = await keys.ensureCurrent().then(() => null, (e: unknown) => e);
    expect(err).toBeInstanceOf(KeyRotationError);
    expect(String(err)).toBe(`KeyRotationError: could not rotate signing key ${first} (90 days old): the store is unavailable; SETs are signed with it until a rotation succeeds`);
    expect((await keys.current()).kid).toBe(first);
    expect(await store.listAudit({})).toEqual([]);
    const second = await keys.ensureCurrent(); // housekeeping, a minute later
    expect(second).not.toBe(first);
    expect((await store.listAudit({})).map((a) => a.target)).toEqual([`key:${second}`]);
  });

  it('a key 90 days old, several processes due at once: one rotates, the others sign with its new key', async () => {
    const store = new MemoryStore();
    let now = T0;
    const processes = [1, 2, 3, 4].map((n) => new SigningKeys(store, () => now, (key) => keyRotationAudit(`serve:n${n}`, key, now)));
    const first = await processes[0]!.ensureCurrent();
    now += KEY_ROTATION_MS;
    const kids = await Promise.all(processes.map((p) => p.ensureCurrent()));
    const rotated = (await store.listAudit({})).map((a) => a.target.replace('key:', ''));
    expect(rotated).toHaveLength(1);
    expect(kids).toEqual([rotated[0], rotated[0], rotated[0], rotated[0]]);
    expect((await signingKeyViews(store, now)).map((k) => [k.kid, k.current])).toEqual([
      [rotated[0], true],
      [first, false],
    ]);
  });
});

