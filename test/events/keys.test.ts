import { compactVerify, createLocalJWKSet, decodeProtectedHeader } from 'jose';
import { describe, expect, it } from 'vitest';
import { KEY_ROTATION_MS, RETIRED_KEY_PUBLISHED_MS, SigningKeys } from '../../src/events/keys.js';
import { setClaims, signSet, TOKENS_REVOKED } from '../../src/events/set.js';
import { MemoryStore } from '../../src/store/memory/index.js';
import type { RevocationEvent } from '../../src/store/store.js';

const T0 = Date.UTC(2026, 0, 1);
const DAY = 86_400_000;

const grant: RevocationEvent = { id: 'e-1', at: T0 - 1_500, reason: 'reuse_detected', scope: 'grant', jti: 'j-1', tokenType: 'refresh_token', grantId: 'g-1', username: 'alice', clientId: 'app' };

describe('SET claims (common wire decisions)', () => {
  it('names the subject by scope, in seconds, with snake_case members', () => {
    expect(setClaims(grant, 'https://iss', 'aud-1', T0)).toEqual({
      iss: 'https://iss',
      iat: T0 / 1000,
      jti: 'e-1',
      aud: 'aud-1',
      toe: Math.floor((T0 - 1_500) / 1000),
      sub_id: { format: 'opaque', id: 'g-1' },
      events: { [TOKENS_REVOKED]: { scope: 'grant', reason: 'reuse_detected', jti: 'j-1', token_type: 'refresh_token', grant_id: 'g-1', username: 'alice', client_id: 'app' } },
    });
    expect(setClaims({ id: 'e', at: T0, reason: 'revoked', scope: 'user', username: 'bob' }, 'i', 'a', T0).sub_id.id).toBe('bob');
    expect(setClaims({ id: 'e', at: T0, reason: 'client_deleted', scope: 'client', clientId: 'c' }, 'i', 'a', T0).events[TOKENS_REVOKED]).toEqual({ scope: 'client', reason: 'client_deleted', client_id: 'c' });
    expect(setClaims({ ...grant, scope: 'token', tokenType: 'access_token' }, 'i', 'a', T0).sub_id.id).toBe('j-1');
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
    const keys = new SigningKeys(store, () => now);
    const first = await keys.ensureCurrent();
    const oldSet = await signSet(grant, 'i', 'a', await keys.current(), now);
    now += DAY;
    const second = (await keys.rotate()).kid;
    const newSet = await signSet(grant, 'i', 'a', await keys.current(), now);
    expect(decodeProtectedHeader(newSet).kid).toBe(second);
    const jwks = await keys.jwks();
    expect(jwks.keys.map((k) => k.kid)).toEqual([second, first]);
    for (const k of jwks.keys) expect(k).not.toHaveProperty('d');
    for (const set of [oldSet, newSet]) await compactVerify(set, createLocalJWKSet(jwks));

    now += RETIRED_KEY_PUBLISHED_MS + 1;
    expect((await keys.jwks()).keys.map((k) => k.kid)).toEqual([second]);
    expect(await keys.maintain()).toBe(1);
    expect((await keys.list()).map((k) => k.kid)).toEqual([second]);

    now += KEY_ROTATION_MS;
    const third = await keys.ensureCurrent();
    expect(third).not.toBe(second);
    expect((await keys.list()).map((k) => [k.kid, k.current])).toEqual([
      [third, true],
      [second, false],
    ]);
  });
});
