import { describe, expect, it } from 'vitest';
import { InvalidTokenError } from '../../src/engine/errors.js';
import { addClient, DAY, HOUR, introspected, issueFor, makeEngine, mustRecordOf, refreshAs, revokeAs, SECOND } from '../helpers/engine.js';

/** Spec part 3: every row of the state table, with the default (non-rotating) engine. */
describe('spec part 3: states and transitions', () => {
  async function setup() {
    const env = makeEngine();
    const client = await addClient(env.store);
    const issued = await issueFor(env.engine, client);
    return { ...env, client, issued };
  }

  it('active → expired when the access token validity period ends (1 h default)', async () => {
    const { engine, clock, issued } = await setup();
    expect(await introspected(engine, issued.access_token)).toMatchObject({ active: true });
    clock.advance(HOUR - 1);
    expect(await introspected(engine, issued.access_token)).toMatchObject({ active: true });
    clock.advance(1);
    expect(await introspected(engine, issued.access_token)).toEqual({ active: false });
    expect((await engine.inspect({ jti: issued.jti })).verdict).toBe('expired');
  });

  it('active → expired for the refresh token (30 d default); refreshing it then fails with invalid_token', async () => {
    const { engine, clock, client, issued } = await setup();
    clock.advance(30 * DAY - SECOND);
    await expect(refreshAs(engine, { client, refreshToken: issued.refresh_token })).resolves.toMatchObject({ token_type: 'bearer' });
    clock.advance(SECOND);
    expect(await introspected(engine, issued.refresh_token)).toEqual({ active: false });
    const err = await refreshAs(engine, { client, refreshToken: issued.refresh_token }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidTokenError);
    expect(err).toMatchObject({ code: 'invalid_token', reason: 'expired' });
  });

  it('active → revoked by revocation: token_revoke_success', async () => {
    const { engine, client, issued } = await setup();
    const { result } = await revokeAs(engine, { client, token: issued.access_token });
    expect(result.code).toBe('token_revoke_success');
    expect(await introspected(engine, issued.access_token)).toEqual({ active: false });
    expect((await engine.inspect({ jti: issued.jti })).verdict).toBe('revoked');
  });

  it('revoked → revoked when the same token is submitted again: token_already_revoked, revocation time unchanged', async () => {
    const { engine, store, clock, client, issued } = await setup();
    await revokeAs(engine, { client, token: issued.refresh_token });
    const first = await mustRecordOf(store, issued.refresh_token);
    clock.advance(5 * SECOND);
    const { result: again } = await revokeAs(engine, { client, token: issued.refresh_token });
    expect(again.code).toBe('token_already_revoked');
    expect((await mustRecordOf(store, issued.refresh_token)).revokedAt).toBe(first.revokedAt);
  });

  it('refresh: the refresh token stays as issued, a new access token is returned', async () => {
    const { engine, store, clock, client, issued } = await setup();
    const before = await mustRecordOf(store, issued.refresh_token);
    clock.advance(2 * HOUR); // the first access token has expired: the case the spec describes
    const refreshed = await refreshAs(engine, { client, refreshToken: issued.refresh_token });
    expect(refreshed.refresh_token).toBe(issued.refresh_token);
    expect(refreshed.access_token).not.toBe(issued.access_token);
    expect(refreshed.jti).not.toBe(issued.jti);
    expect(await mustRecordOf(store, issued.refresh_token)).toEqual(before);
    expect(await introspected(engine, refreshed.access_token)).toMatchObject({ active: true, jti: refreshed.jti });
    expect(await introspected(engine, issued.refresh_token)).toMatchObject({ active: true, jti: before.jti });
    // A second refresh works too and again returns the same refresh token.
    const again = await refreshAs(engine, { client, refreshToken: issued.refresh_token });
    expect(again.refresh_token).toBe(issued.refresh_token);
    expect(new Set([issued.jti, refreshed.jti, again.jti]).size).toBe(3);
  });

  describe('introspection of a revoked or expired token is exactly {active:false} and changes nothing', () => {
    for (const kind of ['access_token', 'refresh_token'] as const) {
      it(`revoked ${kind}`, async () => {
        const { engine, store, client, issued } = await setup();
        const token = kind === 'access_token' ? issued.access_token : issued.refresh_token;
        await revokeAs(engine, { client, token });
        const before = await mustRecordOf(store, token);
        expect(await introspected(engine, token)).toStrictEqual({ active: false });
        expect(await mustRecordOf(store, token)).toEqual(before);
      });

      it(`expired ${kind}`, async () => {
        const { engine, store, clock, issued } = await setup();
        const token = kind === 'access_token' ? issued.access_token : issued.refresh_token;
        clock.advance(31 * DAY);
        const before = await mustRecordOf(store, token);
        expect(await introspected(engine, token)).toStrictEqual({ active: false });
        expect(await mustRecordOf(store, token)).toEqual(before);
      });
    }

    it('unknown and malformed tokens', async () => {
      const { engine } = await setup();
      expect(await introspected(engine, 'tca_' + 'A'.repeat(43))).toStrictEqual({ active: false });
      expect(await introspected(engine, 'not a token')).toStrictEqual({ active: false });
      expect(await introspected(engine, '')).toStrictEqual({ active: false });
    });
  });
});
