import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { describe, expect, it } from 'vitest';
import { SigningKeys } from '../../src/events/keys.js';
import { hasEventsFor, SESSION_REVOKED, setClaims, signSet, TOKENS_REVOKED } from '../../src/events/set.js';
import { MemoryStore } from '../../src/store/memory/index.js';
import type { RevocationEvent } from '../../src/store/store.js';

const T0 = Date.UTC(2026, 0, 1);
const CAEP = { tokenctl: false, caep: true };
const BOTH = { tokenctl: true, caep: true };
const grant: RevocationEvent = { id: 'e-1', at: T0, reason: 'revoked', scope: 'grant', jti: 'j-1', tokenType: 'refresh_token', grantId: 'g-1', username: 'alice', clientId: 'app' };
const token: RevocationEvent = { id: 'e-2', at: T0, reason: 'revoked', scope: 'token', jti: 'j-2', tokenType: 'access_token', grantId: 'g-2', username: 'bob', clientId: 'app' };
const user: RevocationEvent = { id: 'e-3', at: T0 + 1000, reason: 'reuse_detected', scope: 'user', username: 'carol' };

describe('CAEP session-revoked in SETs', () => {
  it('a grant that ends: session-revoked alone for a CAEP stream, its complex subject, event_timestamp, a reason_admin', () => {
    const c = setClaims({ id: 'e-1', events: [grant] }, 'https://iss', 'aud', T0, CAEP);
    expect(c.events).toEqual({ [SESSION_REVOKED]: { event_timestamp: T0 / 1000, reason_admin: { en: 'tokenctl: grant g-1 of user alice at client app revoked' } } });
    expect(c.sub_id).toEqual({ format: 'complex', session: { format: 'opaque', id: 'g-1' }, user: { format: 'opaque', id: 'alice' }, application: { format: 'opaque', id: 'app' } });
    expect(c.txn).toBe('e-1');
  });

  it('both events for a stream that asks for both, tokenctl\'s last; an access token alone has nothing for a CAEP stream', () => {
    const c = setClaims({ id: 'e-1', events: [grant, token] }, 'i', 'a', T0, BOTH);
    expect(Object.keys(c.events)).toEqual([SESSION_REVOKED, TOKENS_REVOKED]);
    expect(c.events[TOKENS_REVOKED]!.revocations).toHaveLength(2);
    expect(hasEventsFor({ id: 'e-2', events: [token] }, CAEP)).toBe(false);
    expect(hasEventsFor({ id: 'e-2', events: [token] }, BOTH)).toBe(true);
  });

  it('several sessions: RFC 9493 aliases of their subjects; reuse detected is initiated by policy', () => {
    const c = setClaims({ id: 'e-1', events: [grant, token, user] }, 'i', 'a', T0, CAEP);
    expect(c.sub_id).toEqual({ format: 'aliases', identifiers: [expect.objectContaining({ session: { format: 'opaque', id: 'g-1' } }), { format: 'complex', user: { format: 'opaque', id: 'carol' } }] });
    expect(c.events[SESSION_REVOKED]!.event_timestamp).toBe((T0 + 1000) / 1000);
    expect(setClaims({ id: 'e-3', events: [user] }, 'i', 'a', T0, CAEP).events[SESSION_REVOKED]!.initiating_entity).toBe('policy');
  });

  it('RS256 and ES256 keys are both current, both published, and each signs SETs that verify against the JWKS', async () => {
    const keys = new SigningKeys(new MemoryStore(), () => T0);
    await keys.ensureAll();
    const jwks = await keys.jwks();
    expect(jwks.keys.map((k) => [k.alg, k.kty]).sort()).toEqual([['ES256', 'EC'], ['RS256', 'RSA']]);
    for (const alg of ['ES256', 'RS256'] as const) {
      const set = await signSet({ id: 'e-1', events: [grant] }, 'https://iss', 'aud', await keys.current(alg), T0, CAEP);
      expect(decodeProtectedHeader(set)).toMatchObject({ alg, typ: 'secevent+jwt' });
      const { payload } = await jwtVerify(set, createLocalJWKSet(jwks), { issuer: 'https://iss', audience: 'aud', algorithms: [alg], currentDate: new Date(T0) });
      expect(payload.events).toHaveProperty([SESSION_REVOKED]);
    }
  });
});

describe('stream status (SSF 1.0 §8.1.2)', () => {
  it('a disabled stream has nothing to be told: its deliveries are settled unsent', async () => {
    const { eventSelection } = await import('../../src/engine/stream-settings.js');
    const disabled = eventSelection(JSON.stringify({ eventsRequested: [TOKENS_REVOKED, SESSION_REVOKED], status: 'disabled' }));
    expect(hasEventsFor({ id: 'e-1', events: [grant] }, disabled)).toBe(false);
    const paused = eventSelection(JSON.stringify({ eventsRequested: [SESSION_REVOKED], status: 'paused' }));
    expect(paused).toEqual({ tokenctl: false, caep: true });
  });
});
