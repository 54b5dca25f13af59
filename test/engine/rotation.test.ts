import { describe, expect, it } from 'vitest';
import { ROTATION_RACE_WINDOW_MS } from '../../src/engine/context.js';
import { InvalidTokenError } from '../../src/engine/errors.js';
import type { Engine } from '../../src/engine/engine.js';
import type { ClientRecord } from '../../src/store/store.js';
import { addClient, credentialsOf, DAY, HOUR, introspected, issueFor, makeEngine, mustRecordOf, refreshAs, SECOND, settle } from '../helpers/engine.js';

async function reason(engine: Engine, client: ClientRecord, refreshToken: string): Promise<string> {
  const error = await refreshAs(engine, { client, refreshToken }).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(InvalidTokenError);
  return (error as InvalidTokenError).reason;
}

async function setupWith(options: { rotationRaceWindowMs: number }) {
  const env = makeEngine({ rotateRefreshTokens: true, ...options });
  const client = await addClient(env.store);
  const issued = await issueFor(env.engine, client);
  return { ...env, client, issued };
}

async function setup(options: { refreshGraceMs?: number; rotate?: boolean } = {}) {
  const env = makeEngine({ rotateRefreshTokens: options.rotate ?? true, refreshGraceMs: options.refreshGraceMs ?? 0 });
  const client = await addClient(env.store);
  const issued = await issueFor(env.engine, client);
  return { ...env, client, issued };
}

/** Just past the rotation race window: a replaced token presented then is reuse, not a lost race. */
const PAST_WINDOW = ROTATION_RACE_WINDOW_MS + 1;

describe('refresh token rotation (contract 3, RFC 9700 §4.14.2)', () => {
  it('a replaced token presented within the race window is a lost race: refused as replaced, nothing revoked, nothing audited', async () => {
    const { engine, clock, client, issued } = await setup();
    const winner = await refreshAs(engine, { client, refreshToken: issued.refresh_token });
    clock.advance(ROTATION_RACE_WINDOW_MS); // the window's last millisecond: clocks of other nodes may run ahead
    expect(await reason(engine, client, issued.refresh_token)).toBe('replaced');
    expect(await introspected(engine, winner.refresh_token)).toMatchObject({ active: true });
    expect(await introspected(engine, winner.access_token)).toMatchObject({ active: true });
    expect(await engine.audit({})).toEqual([]);
    clock.advance(1);
    expect(await reason(engine, client, issued.refresh_token)).toBe('revoked');
    expect(await introspected(engine, winner.refresh_token)).toEqual({ active: false });
  });

  it('the window is measured from the arrival of the request, so a request that waited in a busy server is still a lost race', async () => {
    const { engine, clock, client, issued } = await setup();
    await refreshAs(engine, { client, refreshToken: issued.refresh_token });
    // The second request arrives at once, and its read of the client and the token takes long.
    const read = engine.store.findClientAndToken.bind(engine.store);
    engine.store.findClientAndToken = async (...args) => {
      clock.advance(10 * ROTATION_RACE_WINDOW_MS);
      return read(...args);
    };
    const error = await refreshAs(engine, { client, refreshToken: issued.refresh_token }).catch((e: unknown) => e);
    expect(error).toMatchObject({ reason: 'replaced' });
  });

  it('the window can be narrowed (rotationRaceWindowMs), and is at most 60 s', async () => {
    const { engine, clock, client, issued } = await setupWith({ rotationRaceWindowMs: 0 });
    await refreshAs(engine, { client, refreshToken: issued.refresh_token });
    clock.advance(1);
    expect(await reason(engine, client, issued.refresh_token)).toBe('revoked');
    expect(() => makeEngine({ rotationRaceWindowMs: 60_001 })).toThrow(/race window/);
  });

  it('each refresh returns a new refresh token; the old one is no longer active', async () => {
    const { engine, client, issued } = await setup();
    const first = await refreshAs(engine, { client, refreshToken: issued.refresh_token });
    const second = await refreshAs(engine, { client, refreshToken: first.refresh_token });
    expect(new Set([issued.refresh_token, first.refresh_token, second.refresh_token]).size).toBe(3);
    expect(await introspected(engine, issued.refresh_token)).toEqual({ active: false });
    expect(await introspected(engine, first.refresh_token)).toEqual({ active: false });
    expect(await introspected(engine, second.refresh_token)).toMatchObject({ active: true, token_type: 'refresh_token' });
  });

  it('the new refresh token belongs to the same grant and does not outlive the old one', async () => {
    const { engine, store, clock, client, issued } = await setup();
    const old = await mustRecordOf(store, issued.refresh_token);
    clock.advance(10 * DAY);
    const next = await refreshAs(engine, { client, refreshToken: issued.refresh_token });
    const record = await mustRecordOf(store, next.refresh_token);
    expect(record.grantId).toBe(old.grantId);
    expect(record.expiresAt).toBe(old.expiresAt);
    expect(record.scope).toBe(old.scope);
    expect((await mustRecordOf(store, issued.refresh_token)).replacedBy).toBe(record.jti);
  });

  it('a replaced token presented again after the race window is reuse: refused, and the whole grant is revoked', async () => {
    const { engine, clock, client, issued } = await setup();
    const first = await refreshAs(engine, { client, refreshToken: issued.refresh_token });
    clock.advance(PAST_WINDOW);
    const otherGrant = await issueFor(engine, client);
    expect(await reason(engine, client, issued.refresh_token)).toBe('revoked');
    for (const token of [first.refresh_token, first.access_token, issued.access_token]) {
      expect(await introspected(engine, token)).toEqual({ active: false });
    }
    expect(await reason(engine, client, first.refresh_token)).toBe('revoked');
    expect(await introspected(engine, otherGrant.refresh_token)).toMatchObject({ active: true });
  });

  it('reuse detection is audited', async () => {
    const { engine, store, clock, client, issued } = await setup();
    const { grantId } = await mustRecordOf(store, issued.refresh_token);
    await refreshAs(engine, { client, refreshToken: issued.refresh_token });
    clock.advance(PAST_WINDOW);
    await reason(engine, client, issued.refresh_token);
    const [entry] = await engine.audit({});
    expect(entry).toMatchObject({ actor: client.id, action: 'token.reuse_detected', target: `grant:${grantId} client:${client.id}`, count: 4 }); // both refresh tokens and both access tokens
  });

  it('an expired replaced token is just expired: the grant is not revoked', async () => {
    const { engine, clock, client, issued } = await setup();
    clock.advance(30 * DAY - HOUR);
    const next = await refreshAs(engine, { client, refreshToken: issued.refresh_token });
    clock.advance(HOUR);
    expect(await reason(engine, client, issued.refresh_token)).toBe('expired');
    expect(await reason(engine, client, next.refresh_token)).toBe('expired');
  });

  it('concurrent refreshes of one token: exactly one succeeds, the losers do not revoke the grant', async () => {
    const { engine, client, issued } = await setup();
    const outcomes = await Promise.all(Array.from({ length: 5 }, () => settle(refreshAs(engine, { client, refreshToken: issued.refresh_token }))));
    const winners = outcomes.flatMap((o) => (o.ok ? [o.value] : []));
    expect(winners).toHaveLength(1);
    for (const o of outcomes) if (!o.ok) expect(o.error).toMatchObject({ code: 'invalid_token', reason: 'replaced' });
    const winner = winners[0]!;
    expect(await introspected(engine, winner.access_token)).toMatchObject({ active: true });
    expect(await introspected(engine, winner.refresh_token)).toMatchObject({ active: true });
    await expect(refreshAs(engine, { client, refreshToken: winner.refresh_token })).resolves.toMatchObject({ token_type: 'bearer' });
    expect(await engine.listTokens({ type: 'access_token' })).toHaveLength(3); // issue + winner + the last refresh
  });

  it('without rotation, concurrent refreshes of one token all succeed', async () => {
    const { engine, client, issued } = await setup({ rotate: false });
    const responses = await Promise.all(Array.from({ length: 5 }, () => refreshAs(engine, { client, refreshToken: issued.refresh_token })));
    expect(new Set(responses.map((r) => r.access_token)).size).toBe(5);
    for (const r of responses) {
      expect(r.refresh_token).toBe(issued.refresh_token);
      expect(await introspected(engine, r.access_token)).toMatchObject({ active: true });
    }
  });

  it('tokens replaced while rotation was on are still reuse after it is turned off', async () => {
    const { engine, store, clock, client, issued } = await setup();
    const next = await refreshAs(engine, { client, refreshToken: issued.refresh_token });
    clock.advance(PAST_WINDOW);
    const { engine: plain } = makeEngine({ store, clock, rotateRefreshTokens: false });
    expect(await reason(plain, client, issued.refresh_token)).toBe('revoked');
    expect(await introspected(plain, next.refresh_token)).toEqual({ active: false });
  });
});

describe('refresh grace period (refreshGraceMs)', () => {
  const GRACE = 30 * SECOND;

  it('the immediately previous token works within the grace and revokes the replacement whose response was lost', async () => {
    const { engine, clock, client, issued } = await setup({ refreshGraceMs: GRACE });
    clock.advance(SECOND);
    const lost = await refreshAs(engine, { client, refreshToken: issued.refresh_token });
    clock.advance(GRACE);
    const retry = await refreshAs(engine, { client, refreshToken: issued.refresh_token });
    expect(retry.refresh_token).not.toBe(lost.refresh_token);
    expect(await introspected(engine, lost.refresh_token)).toEqual({ active: false });
    // The access token of the lost response goes with it: whoever received that response holds it.
    expect(await introspected(engine, lost.access_token)).toEqual({ active: false });
    expect(await introspected(engine, issued.access_token)).toMatchObject({ active: true });
    expect(await introspected(engine, retry.refresh_token)).toMatchObject({ active: true });
    expect(await introspected(engine, retry.access_token)).toMatchObject({ active: true });
    await expect(refreshAs(engine, { client, refreshToken: retry.refresh_token })).resolves.toMatchObject({ token_type: 'bearer' });
  });

  it('the lost replacement, presented again, is reuse: the grant ends, whichever branch holds it (issue 19 item 3)', async () => {
    const { engine, clock, client, issued } = await setup({ refreshGraceMs: GRACE });
    // The client refreshes RT1 to RT2; an attacker with a copy of RT1 replays it within the grace.
    const client2 = await refreshAs(engine, { client, refreshToken: issued.refresh_token });
    clock.advance(PAST_WINDOW);
    const attacker = await refreshAs(engine, { client, refreshToken: issued.refresh_token });
    clock.advance(SECOND);
    // The client's RT2 is no plain 401: it is reuse, and the attacker's branch dies with the grant.
    expect(await reason(engine, client, client2.refresh_token)).toBe('revoked');
    for (const token of [attacker.refresh_token, attacker.access_token, client2.access_token]) {
      expect(await introspected(engine, token)).toEqual({ active: false });
    }
    const [entry] = await engine.audit({});
    expect(entry).toMatchObject({ action: 'token.reuse_detected' });
    expect(await reason(engine, client, attacker.refresh_token)).toBe('revoked');
  });

  it('a presentation within the race window is a lost race even with a grace: the winner keeps its tokens', async () => {
    const { engine, clock, client, issued } = await setup({ refreshGraceMs: GRACE });
    const winner = await refreshAs(engine, { client, refreshToken: issued.refresh_token });
    clock.advance(ROTATION_RACE_WINDOW_MS);
    expect(await reason(engine, client, issued.refresh_token)).toBe('replaced');
    expect(await introspected(engine, winner.refresh_token)).toMatchObject({ active: true });
    expect(await introspected(engine, winner.access_token)).toMatchObject({ active: true });
  });

  it('after the grace the previous token is reuse: the grant is revoked', async () => {
    const { engine, clock, client, issued } = await setup({ refreshGraceMs: GRACE });
    const next = await refreshAs(engine, { client, refreshToken: issued.refresh_token });
    clock.advance(GRACE + 1);
    expect(GRACE + 1).toBeGreaterThan(ROTATION_RACE_WINDOW_MS);
    expect(await reason(engine, client, issued.refresh_token)).toBe('revoked');
    expect(await introspected(engine, next.refresh_token)).toEqual({ active: false });
    expect(await introspected(engine, next.access_token)).toEqual({ active: false });
  });

  it('never a token two generations old, even within the grace', async () => {
    const { engine, clock, client, issued } = await setup({ refreshGraceMs: GRACE });
    const first = await refreshAs(engine, { client, refreshToken: issued.refresh_token });
    clock.advance(SECOND);
    const second = await refreshAs(engine, { client, refreshToken: first.refresh_token });
    clock.advance(PAST_WINDOW);
    expect(await reason(engine, client, issued.refresh_token)).toBe('revoked');
    expect(await introspected(engine, second.refresh_token)).toEqual({ active: false });
  });

  it('without a grace (the default) the previous token is reuse as soon as the race window is over', async () => {
    const { engine, clock, client, issued } = await setup();
    const next = await refreshAs(engine, { client, refreshToken: issued.refresh_token });
    clock.advance(PAST_WINDOW);
    expect(await reason(engine, client, issued.refresh_token)).toBe('revoked');
    expect(await introspected(engine, next.refresh_token)).toEqual({ active: false });
  });

  it('the grace must be between 0 and 60 s', () => {
    expect(() => makeEngine({ refreshGraceMs: 60_001 })).toThrow(/grace/);
    expect(() => makeEngine({ refreshGraceMs: -1 })).toThrow(/grace/);
    expect(() => makeEngine({ refreshGraceMs: 60_000 })).not.toThrow();
  });
});

describe('a replaced refresh token revoked in the same millisecond as its rotation', () => {
  it('reads as revoked once it has expired too, not as expired (found by the state-machine test)', async () => {
    const { engine, store, clock } = makeEngine({ rotateRefreshTokens: true });
    const app = await addClient(store, { refreshTtlMs: HOUR });
    const issued = await issueFor(engine, app);
    await refreshAs(engine, { client: app, refreshToken: issued.refresh_token });
    // No time passes between the rotation and the revocation: revokedAt equals replacedAt.
    await engine.revokeAsClient({ credentials: credentialsOf(app), token: issued.refresh_token });
    clock.advance(HOUR);
    const err = await refreshAs(engine, { client: app, refreshToken: issued.refresh_token }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidTokenError);
    expect((err as InvalidTokenError).reason).toBe('revoked');
  });
});
