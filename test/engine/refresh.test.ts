import { describe, expect, it } from 'vitest';
import { InvalidScopeError, InvalidTokenError, RefreshLimitError } from '../../src/engine/errors.js';
import type { Engine } from '../../src/engine/engine.js';
import type { ClientRecord } from '../../src/store/store.js';
import { addClient, DAY, introspected, issueFor, makeEngine, mustRecordOf, refreshAs, revokeAs } from '../helpers/engine.js';

/** The failure the refresh is expected to end with: InvalidTokenError with this reason. */
async function refreshFailure(engine: Engine, client: ClientRecord, refreshToken: string): Promise<InvalidTokenError> {
  const error = await refreshAs(engine, { client, refreshToken }).then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(InvalidTokenError);
  return error as InvalidTokenError;
}

describe('refresh errors (spec 7.1, contract 3)', () => {
  async function setup() {
    const env = makeEngine();
    const client = await addClient(env.store, { id: 'app' });
    const other = await addClient(env.store, { id: 'other' });
    const issued = await issueFor(env.engine, client);
    return { ...env, client, other, issued };
  }

  async function accessTokenCount(engine: Engine): Promise<number> {
    return (await engine.listTokens({ type: 'access_token' })).length;
  }

  it('an expired refresh token: reason expired, the message says so and ends with the token (spec 7.1)', async () => {
    const { engine, clock, client, issued } = await setup();
    clock.advance(30 * DAY);
    const error = await refreshFailure(engine, client, issued.refresh_token);
    expect(error.code).toBe('invalid_token');
    expect(error.reason).toBe('expired');
    expect(error.message).toMatch(/expired/);
    expect(error.message.endsWith(issued.refresh_token)).toBe(true);
    expect(await accessTokenCount(engine)).toBe(1);
  });

  it('a revoked refresh token: reason revoked, the token is not echoed', async () => {
    const { engine, client, issued } = await setup();
    await revokeAs(engine, { client, token: issued.refresh_token });
    const error = await refreshFailure(engine, client, issued.refresh_token);
    expect(error.reason).toBe('revoked');
    expect(error.message).toMatch(/revoked/);
    expect(error.message).not.toContain(issued.refresh_token);
    expect(await accessTokenCount(engine)).toBe(1);
  });

  it.each([
    ['well-formed but never issued', 'tcr_' + 'Q'.repeat(43)],
    ['malformed', 'tcr_short'],
    ['empty', ''],
  ])('an unknown refresh token (%s): reason unknown, not echoed', async (_what, token) => {
    const { engine, client } = await setup();
    const error = await refreshFailure(engine, client, token);
    expect(error.reason).toBe('unknown');
    if (token !== '') expect(error.message).not.toContain(token);
    expect(await accessTokenCount(engine)).toBe(1);
  });

  it('an access token presented as a refresh token: reason unknown', async () => {
    const { engine, client, issued } = await setup();
    const error = await refreshFailure(engine, client, issued.access_token);
    expect(error.reason).toBe('unknown');
    expect(error.message).not.toContain(issued.access_token);
    expect(await accessTokenCount(engine)).toBe(1);
  });

  it("another client's refresh token reads as unknown, and the token stays usable by its owner", async () => {
    const { engine, store, client, other, issued } = await setup();
    const before = await mustRecordOf(store, issued.refresh_token);
    const error = await refreshFailure(engine, other, issued.refresh_token);
    expect(error.reason).toBe('unknown');
    expect(error.message).toBe(InvalidTokenError.describe('unknown', issued.refresh_token));
    expect(await mustRecordOf(store, issued.refresh_token)).toEqual(before);
    await expect(refreshAs(engine, { client, refreshToken: issued.refresh_token })).resolves.toMatchObject({ scope: 'read write admin' });
  });

  it("another client's refresh token reads as unknown even when it is expired or revoked", async () => {
    const { engine, clock, client, other, issued } = await setup();
    await revokeAs(engine, { client, token: issued.refresh_token });
    expect((await refreshFailure(engine, other, issued.refresh_token)).reason).toBe('unknown');
    const fresh = await issueFor(engine, client);
    clock.advance(31 * DAY);
    expect((await refreshFailure(engine, other, fresh.refresh_token)).reason).toBe('unknown');
  });

  it('a refresh token of a grant whose access token was revoked still works', async () => {
    const { engine, client, issued } = await setup();
    await revokeAs(engine, { client, token: issued.access_token });
    await expect(refreshAs(engine, { client, refreshToken: issued.refresh_token })).resolves.toMatchObject({ token_type: 'bearer' });
  });
});

describe('scope on refresh (RFC 6749 §6)', () => {
  async function setup(scope = 'read write admin') {
    const env = makeEngine();
    const client = await addClient(env.store);
    const issued = await issueFor(env.engine, client, { scope });
    return { ...env, client, issued };
  }

  it('without a scope: the grant\'s scope', async () => {
    const { engine, client, issued } = await setup('read write');
    expect((await refreshAs(engine, { client, refreshToken: issued.refresh_token })).scope).toBe('read write');
  });

  it('a subset: the new access token has just that, the grant keeps its scope', async () => {
    const { engine, client, issued } = await setup();
    const narrowed = await refreshAs(engine, { client, refreshToken: issued.refresh_token, scope: 'write read' });
    expect(narrowed.scope).toBe('write read');
    expect(await introspected(engine, narrowed.access_token)).toMatchObject({ scope: 'write read' });
    expect(await introspected(engine, issued.refresh_token)).toMatchObject({ scope: 'read write admin' });
    const full = await refreshAs(engine, { client, refreshToken: issued.refresh_token });
    expect(full.scope).toBe('read write admin');
  });

  it('a superset: InvalidScopeError naming the extra scope, and no token is issued', async () => {
    const { engine, client, issued } = await setup('read');
    const error = await refreshAs(engine, { client, refreshToken: issued.refresh_token, scope: 'read delete' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidScopeError);
    expect((error as InvalidScopeError).code).toBe('invalid_scope');
    expect((error as InvalidScopeError).message).toContain('delete');
    expect(await engine.listTokens({ type: 'access_token' })).toHaveLength(1);
  });

  it('a malformed scope is invalid_scope too (RFC 6749 §5.2), not an operator input error', async () => {
    const { engine, client, issued } = await setup('read');
    await expect(refreshAs(engine, { client, refreshToken: issued.refresh_token, scope: 'read "x"' })).rejects.toBeInstanceOf(InvalidScopeError);
  });

  it('a grant with an empty scope cannot be widened on refresh', async () => {
    const env = makeEngine();
    const client = await addClient(env.store, { scope: '' });
    const issued = await issueFor(env.engine, client);
    await expect(refreshAs(env.engine, { client, refreshToken: issued.refresh_token, scope: 'admin' })).rejects.toBeInstanceOf(InvalidScopeError);
  });
});

describe('a bound on refreshes of one refresh token (issue 19)', () => {
  it('at most maxRefreshesPerMinute tokens from one grant in any minute; then 429-style RefreshLimitError, and again a minute later', async () => {
    const { engine, store, clock } = makeEngine({ maxRefreshesPerMinute: 5 });
    const client = await addClient(store);
    const issued = await issueFor(engine, client);
    // The grant's refresh and access tokens count: three refreshes fill the minute.
    for (let i = 0; i < 3; i++) await refreshAs(engine, { client, refreshToken: issued.refresh_token });
    const error = await refreshAs(engine, { client, refreshToken: issued.refresh_token }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RefreshLimitError);
    expect(error).toMatchObject({ max: 5, retryAfterSeconds: 60 });
    expect(await engine.listTokens({ type: 'access_token' })).toHaveLength(4);
    // Another grant of the same client is not affected.
    const other = await issueFor(engine, client);
    await expect(refreshAs(engine, { client, refreshToken: other.refresh_token })).resolves.toMatchObject({ token_type: 'bearer' });
    clock.advance(60_000);
    await expect(refreshAs(engine, { client, refreshToken: issued.refresh_token })).resolves.toMatchObject({ token_type: 'bearer' });
  });

  it('0 means no limit; a negative or fractional limit is refused', async () => {
    const { engine, store } = makeEngine({ maxRefreshesPerMinute: 0 });
    const client = await addClient(store);
    const issued = await issueFor(engine, client);
    for (let i = 0; i < 200; i++) await refreshAs(engine, { client, refreshToken: issued.refresh_token });
    expect(() => makeEngine({ maxRefreshesPerMinute: -1 })).toThrow(/refreshes per minute/);
    expect(() => makeEngine({ maxRefreshesPerMinute: 1.5 })).toThrow(/refreshes per minute/);
  });
});
