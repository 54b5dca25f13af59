import { describe, expect, it } from 'vitest';
import { settingFlags, settingsOf } from '../../src/cli/engine-flags.js';
import { ENGINE_SETTINGS } from '../../src/engine/settings.js';

/** serve's flags for the engine's settings are made from engine/settings.ts: nothing is described twice. */
describe('engine setting flags', () => {
  it("serve's flags are named after the settings and described by them, range and default included", () => {
    const flags = settingFlags('refreshGraceMs', 'maxRefreshesPerMinute', 'rotateRefreshTokens');
    expect(Object.keys(flags)).toEqual(['refresh-grace', 'max-refreshes-per-minute', 'rotate-refresh-tokens']);
    expect(flags['refresh-grace'].description).toBe(`${ENGINE_SETTINGS.refreshGraceMs.summary} (0s to 60s) [default: 0s]`);
    expect(flags['refresh-grace'].dependsOn).toEqual(['rotate-refresh-tokens']);
    expect(flags['max-refreshes-per-minute']).toMatchObject({ min: 0, max: 1_000_000 });
    expect(settingsOf({ 'refresh-grace': 5000, 'rotate-refresh-tokens': true, other: 1 }, ['refreshGraceMs', 'rotateRefreshTokens', 'accessTtlMs'])).toEqual({ refreshGraceMs: 5000, rotateRefreshTokens: true, accessTtlMs: undefined });
  });
});
