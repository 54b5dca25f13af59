import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../src/engine/errors.js';
import { engineConfig, shownValue } from '../../src/engine/settings.js';
import { makeEngine } from '../helpers/engine.js';

/** The engine's settings are stated once (engine/settings.ts): the engine applies and checks them. */
describe('engine settings', () => {
  it('each setting not given takes its default', () => {
    expect(engineConfig({})).toEqual({
      issuer: 'https://localhost',
      node: 'tokenctl',
      loginUrl: '',
      devLogin: false,
      dpopNonceSecret: '',
      rotateRefreshTokens: false,
      refreshGraceMs: 0,
      maxRefreshesPerMinute: 120,
      accessTtlMs: 3_600_000,
      refreshTtlMs: 30 * 86_400_000,
      rotationRaceWindowMs: 2000,
      ssfPrivateNetwork: false,
      eventLagWarningMs: 60_000,
    });
    expect(makeEngine({ refreshGraceMs: 5000, rotateRefreshTokens: true }).engine.config).toMatchObject({ refreshGraceMs: 5000, rotateRefreshTokens: true, maxRefreshesPerMinute: 120 });
  });

  it.each([
    [{ refreshGraceMs: 61_000 }, 'the refresh grace period must be between 0s and 60s'],
    [{ rotationRaceWindowMs: -1 }, 'the rotation race window must be between 0s and 60s'],
    [{ maxRefreshesPerMinute: 1.5 }, 'the limit of refreshes per minute must be a whole number between 0 and 1000000'],
    [{ maxRefreshesPerMinute: -1 }, 'the limit of refreshes per minute must be a whole number between 0 and 1000000'],
    [{ accessTtlMs: 999 }, 'the access token lifetime must be between 1s and 366d'],
    [{ refreshTtlMs: 367 * 86_400_000 }, 'the refresh token lifetime must be between 1s and 366d'],
  ])('%j out of range: %s', (given, message) => {
    expect(() => engineConfig(given)).toThrow(InvalidInputError);
    expect(() => engineConfig(given)).toThrow(message);
  });

  it('durations are shown in their largest whole unit', () => {
    const d = { kind: 'duration' } as const;
    expect([0, 2000, 60_000, 900_000, 3_600_000, 30 * 86_400_000, 1500].map((v) => shownValue(d, v))).toEqual(['0s', '2s', '60s', '15m', '1h', '30d', '1500ms']);
  });
});
