import { Flags } from '@oclif/core';
import type { BooleanFlag, OptionFlag } from '@oclif/core/interfaces';
import { ENGINE_SETTINGS, shownValue, type EngineConfig, type EngineSettingName, type Setting } from '../engine/settings.js';
import { parseDuration } from './duration.js';

/** `refreshGraceMs` → `refresh-grace`: a setting's flag is its name, kebab-cased, without the unit. */
type Kebab<S extends string> = S extends `${infer H}${infer T}` ? `${H extends Lowercase<H> ? H : `-${Lowercase<H>}`}${Kebab<T>}` : S;
export type FlagName<K extends string> = Kebab<K extends `${infer Base}Ms` ? Base : K>;

type SettingFlag<S> = S extends { kind: 'boolean' } ? BooleanFlag<boolean> : OptionFlag<number | undefined>;
type SettingFlags<N extends EngineSettingName> = { [K in N as FlagName<K>]: SettingFlag<(typeof ENGINE_SETTINGS)[K]> };

export function flagName<K extends EngineSettingName>(name: K): FlagName<K> {
  return name.replace(/Ms$/, '').replace(/[A-Z]/g, (c) => '-' + c.toLowerCase()) as FlagName<K>;
}

/**
 * Flags for the engine settings `names` (`engine/settings.ts`), each described from its entry
 * there: its meaning, its range and its default are written once, in the engine. In the help
 * group TOKENS.
 */
export function settingFlags<const N extends EngineSettingName>(...names: N[]): SettingFlags<N> {
  return Object.fromEntries(names.map((name) => [flagName(name), settingFlag(ENGINE_SETTINGS[name])])) as SettingFlags<N>;
}

function settingFlag(setting: Setting) {
  const dependsOn = setting.with === undefined ? undefined : [flagName(setting.with as EngineSettingName)];
  const common = { helpGroup: setting.group ?? 'TOKENS', ...(dependsOn && { dependsOn }) };
  switch (setting.kind) {
    case 'boolean':
      return Flags.boolean({ description: setting.summary, ...common });
    case 'integer':
      return Flags.integer({ description: described(setting), min: setting.min, max: setting.max, ...common });
    case 'duration':
      return Flags.custom<number>({ helpValue: '<duration>', parse: async (input: string) => parseDuration(input, setting.max) })({ description: described(setting), ...common });
    case 'string':
      return Flags.string({ description: setting.default === '' ? setting.summary : `${setting.summary} [default: ${setting.default}]`, ...common });
  }
}

/** The help of a numeric setting: its meaning, `(min to max)`, and `[default: …]`. */
function described(setting: Setting & { min: number; max: number; default: number }): string {
  return `${setting.summary} (${shownValue(setting, setting.min)} to ${shownValue(setting, setting.max)}) [default: ${shownValue(setting, setting.default)}]`;
}

/** The engine settings the flags of {@link settingFlags} were given (those not given are left to the engine's defaults). */
export function settingsOf<N extends EngineSettingName>(flags: Record<string, unknown>, names: readonly N[]): Partial<EngineConfig> {
  const given: Partial<Record<EngineSettingName, unknown>> = {};
  for (const name of names) given[name] = flags[flagName(name)];
  return given as Partial<EngineConfig>;
}
