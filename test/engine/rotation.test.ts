import { describe, expect, it } from 'vitest';
import { InvalidTokenError } from '../../src/engine/errors.js';
import type { Engine } from '../../src/engine/engine.js';
import type { ClientRecord } from '../../src/store/store.js';
import { addClient, DAY, HOUR, issueFor, makeEngine, mustRecordOf, SECOND, settle } from '../helpers/engine.js';

async function reason(engine: Engine, client: ClientRecord, refreshToken: string): Promise<string> {
  const error = await engine.refresh({ client, refreshToken }).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(InvalidTokenError);
  return (error as InvalidTokenError).reason;
}

async function setup(options: { refreshGraceMs?: number; rotate?: boolean } = {}) {
  const env = makeEngine({ rotateRefreshTokens: options.rotate ?? true, refreshGraceMs: options.refreshGraceMs ?? 0 });
  const client = await addClient(env.store);
  const issued = await issueFor(env.engine, client);
  return { ...env, client, issued };
}

describe('refresh token rotation (contract 3, RFC 9700 §4.14.2)', () => {
  it('each refresh returns a new refresh token; the old one is no longer active', async () => {
    const { engine, client, issued } = await setup();
    const first = await engine.refresh({ client, refreshToken: issued.refresh_token });
    const second = await engine.refresh({ client, refreshToken: first.refresh_token });
    expect(new Set([issued.refresh_token, first.refresh_token, second.refresh_token]).size).toBe(3);
    expect(await engine.introspect(issued.refresh_token)).toEqual({ active: false });
    expect(await engine.introspect(first.refresh_token)).toEqual({ active: false });
    expect(await engine.introspect(second.refresh_token)).toMatchObject({ active: true, token_type: 'refresh_token' });
  });

  it('the new refresh token belongs to the same grant and does not outlive the old one', async () => {
    const { engine, store, clock, client, issued } = await setup();
    const old = await mustRecordOf(store, issued.refresh_token);
    clock.advance(10 * DAY);
    const next = await engine.refresh({ client, refreshToken: issued.refresh_token });
    const record = await mustRecordOf(store, next.refresh_token);
    expect(record.grantId).toBe(old.grantId);
    expect(record.expiresAt).toBe(old.expiresAt);
    expect(record.scope).toBe(old.scope);
    expect((await mustRecordOf(store, issued.refresh_token)).replacedBy).toBe(record.jti);
  });

  it('a replaced token presented again is reuse: refused, and the whole grant is revoked', async () => {
    const { engine, client, issued } = await setup();
    const first = await engine.refresh({ client, refreshToken: issued.refresh_token });
    const otherGrant = await issueFor(engine, client);
    expect(await reason(engine, client, issued.refresh_token)).toBe('revoked');
    for (const token of [first.refresh_token, first.access_token, issued.access_token]) {
      expect(await engine.introspect(token)).toEqual({ active: false });
    }
    expect(await reason(engine, client, first.refresh_token)).toBe('revoked');
    expect(await engine.introspect(otherGrant.refresh_token)).toMatchObject({ active: true });
  });

  it('reuse detection is audited', async () => {
    const { engine, store, client, issued } = await setup();
    const { grantId } = await mustRecordOf(store, issued.refresh_token);
    await engine.refresh({ client, refreshToken: issued.refresh_token });
    await reason(engine, client, issued.refresh_token);
    const [entry] = await engine.audit({});
    expect(entry).toMatchObject({ actor: client.id, action: 'token.reuse_detected', target: `grant:${grantId} client:${client.id}`, count: 4 }); // both refresh tokens and both access tokens
  });

  it('an expired replaced token is just expired: the grant is not revoked', async () => {
    const { engine, clock, client, issued } = await setup();
    clock.advance(30 * DAY - HOUR);
    const next = await engine.refresh({ client, refreshToken: issued.refresh_token });
    clock.advance(HOUR);
    expect(await reason(engine, client, issued.refresh_token)).toBe('expired');
    expect(await reason(engine, client, next.refresh_token)).toBe('expired');
  });

  it('concurrent refreshes of one token: exactly one succeeds, the losers do not revoke the grant', async () => {
    const { engine, client, issued } = await setup();
    const outcomes = await Promise.all(Array.from({ length: 5 }, () => settle(engine.refresh({ client, refreshToken: issued.refresh_token }))));
    const winners = outcomes.flatMap((o) => (o.ok ? [o.value] : []));
    expect(winners).toHaveLength(1);
    for (const o of outcomes) if (!o.ok) expect(o.error).toMatchObject({ code: 'invalid_token', reason: 'revoked' });
    const winner = winners[0]!;
    expect(await engine.introspect(winner.access_token)).toMatchObject({ active: true });
    expect(await engine.introspect(winner.refresh_token)).toMatchObject({ active: true });
    await expect(engine.refresh({ client, refreshToken: winner.refresh_token })).resolves.toMatchObject({ token_type: 'bearer' });
    expect(await engine.listTokens({ type: 'access_token' })).toHaveLength(3); // issue + winner + the last refresh
  });

  it('without rotation, concurrent refreshes of one token all succeed', async () => {
    const { engine, client, issued } = await setup({ rotate: false });
    const responses = await Promise.all(Array.from({ length: 5 }, () => engine.refresh({ client, refreshToken: issued.refresh_token })));
    expect(new Set(responses.map((r) => r.access_token)).size).toBe(5);
    for (const r of responses) {
      expect(r.refresh_token).toBe(issued.refresh_token);
      expect(await engine.introspect(r.access_token)).toMatchObject({ active: true });
    }
  });

  it('tokens replaced while rotation was on are still reuse after it is turned off', async () => {
    const { engine, store, clock, client, issued } = await setup();
    const next = await engine.refresh({ client, refreshToken: issued.refresh_token });
    const { engine: plain } = makeEngine({ store, clock, rotateRefreshTokens: false });
    expect(await reason(plain, client, issued.refresh_token)).toBe('revoked');
    expect(await plain.introspect(next.refresh_token)).toEqual({ active: false });
  });
});

describe('refresh grace period (refreshGraceMs)', () => {
  const GRACE = 30 * SECOND;

  it('the immediately previous token works within the grace and revokes the replacement whose response was lost', async () => {
    const { engine, clock, client, issued } = await setup({ refreshGraceMs: GRACE });
    clock.advance(SECOND);
    const lost = await engine.refresh({ client, refreshToken: issued.refresh_token });
    clock.advance(GRACE);
    const retry = await engine.refresh({ client, refreshToken: issued.refresh_token });
    expect(retry.refresh_token).not.toBe(lost.refresh_token);
    expect(await engine.introspect(lost.refresh_token)).toEqual({ active: false });
    // The access token of the lost response goes with it: whoever received that response holds it.
    expect(await engine.introspect(lost.access_token)).toEqual({ active: false });
    expect(await engine.introspect(issued.access_token)).toMatchObject({ active: true });
    expect(await engine.introspect(retry.refresh_token)).toMatchObject({ active: true });
    expect(await engine.introspect(retry.access_token)).toMatchObject({ active: true });
    expect(await reason(engine, client, lost.refresh_token)).toBe('revoked');
    // The lost replacement was revoked, not replaced: presenting it is no reuse, the grant lives.
    await expect(engine.refresh({ client, refreshToken: retry.refresh_token })).resolves.toMatchObject({ token_type: 'bearer' });
  });

  it('after the grace the previous token is reuse: the grant is revoked', async () => {
    const { engine, clock, client, issued } = await setup({ refreshGraceMs: GRACE });
    const next = await engine.refresh({ client, refreshToken: issued.refresh_token });
    clock.advance(GRACE + 1);
    expect(await reason(engine, client, issued.refresh_token)).toBe('revoked');
    expect(await engine.introspect(next.refresh_token)).toEqual({ active: false });
    expect(await engine.introspect(next.access_token)).toEqual({ active: false });
  });

  it('never a token two generations old, even within the grace', async () => {
    const { engine, clock, client, issued } = await setup({ refreshGraceMs: GRACE });
    const first = await engine.refresh({ client, refreshToken: issued.refresh_token });
    clock.advance(SECOND);
    const second = await engine.refresh({ client, refreshToken: first.refresh_token });
    clock.advance(SECOND);
    expect(await reason(engine, client, issued.refresh_token)).toBe('revoked');
    expect(await engine.introspect(second.refresh_token)).toEqual({ active: false });
  });

  it('without a grace (the default) the previous token is reuse at once', async () => {
    const { engine, client, issued } = await setup();
    const next = await engine.refresh({ client, refreshToken: issued.refresh_token });
    expect(await reason(engine, client, issued.refresh_token)).toBe('revoked');
    expect(await engine.introspect(next.refresh_token)).toEqual({ active: false });
  });

  it('the grace must be between 0 and 60 s', () => {
    expect(() => makeEngine({ refreshGraceMs: 60_001 })).toThrow(/grace/);
    expect(() => makeEngine({ refreshGraceMs: -1 })).toThrow(/grace/);
    expect(() => makeEngine({ refreshGraceMs: 60_000 })).not.toThrow();
  });
});
