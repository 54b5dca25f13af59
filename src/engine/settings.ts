import { InvalidInputError } from './errors.js';

const SECOND_MS = 1000;
const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** The longest token lifetime: a year. */
export const MAX_LIFETIME_MS = 366 * DAY_MS;

/**
 * One setting of the engine: what it means (`summary`, shown as the flag's help by `serve`), its
 * default, and its range. `label` names it in the error a value out of range gets.
 */
export type Setting = (
  | { kind: 'string'; summary: string; default: string }
  | { kind: 'boolean'; summary: string; default: boolean }
  | { kind: 'integer' | 'duration'; summary: string; label: string; default: number; min: number; max: number }
) & {
  /** A setting that means something only with this one on. */
  with?: string;
  /** The help group of its flag (default TOKENS). */
  group?: string;
};

/**
 * The settings of one engine (one server or one CLI invocation), each stated once: the engine
 * applies and checks them ({@link engineConfig}), `tokenctl serve` makes a flag of each it offers
 * (`cli/engine-flags.ts`, named after the key: `refreshGraceMs` is `--refresh-grace`), and
 * docs/commands.md is generated from those flags. Durations are in milliseconds.
 */
export const ENGINE_SETTINGS = {
  issuer: { kind: 'string', summary: 'Issuer URL, returned as iss and in the RFC 8414 metadata', default: 'https://localhost' },
  node: { kind: 'string', summary: 'Node name, returned as node in token responses', default: 'tokenctl' },
  loginUrl: {
    kind: 'string',
    summary: 'The login app GET /oauth/authorize sends the browser to, with ?login_challenge=… (docs/login.md); empty: none',
    default: '',
  },
  devLogin: {
    kind: 'boolean',
    summary: 'Answer logins with the built-in development page, which takes any user name (never in production)',
    default: false,
  },
  dpopNonceSecret: {
    kind: 'string',
    // A secret, not a switch: every node must make and accept the same nonces (nonce.ts), so all are given it.
    summary: 'DPoP proofs must carry a server nonce (RFC 9449 §8), made with this secret (at least 32 characters, the same on every node; best given as TOKENCTL_DPOP_NONCE_SECRET); empty: no nonces',
    default: '',
  },
  rotateRefreshTokens: {
    kind: 'boolean',
    summary: 'Replace the refresh token on every refresh; a replaced one presented again revokes its grant',
    default: false,
  },
  refreshGraceMs: {
    kind: 'duration',
    summary: 'With rotation: the previous refresh token still works this long after its replacement',
    label: 'refresh grace period',
    with: 'rotateRefreshTokens',
    default: 0,
    min: 0,
    max: 60 * SECOND_MS,
  },
  maxRefreshesPerMinute: {
    kind: 'integer',
    // Bounded so that one leaked refresh token cannot mint access tokens without bound; with
    // rotation every refresh token mints once, and its successor must be stolen too.
    summary: 'Without rotation: at most this many tokens from one refresh token (its grant) in any minute, past it 429 with Retry-After; 0 for no limit',
    label: 'limit of refreshes per minute',
    default: 120,
    min: 0,
    max: 1_000_000,
  },
  accessTtlMs: { kind: 'duration', summary: 'Access token lifetime for clients without their own', label: 'access token lifetime', default: HOUR_MS, min: SECOND_MS, max: MAX_LIFETIME_MS },
  refreshTtlMs: { kind: 'duration', summary: 'Refresh token lifetime for clients without their own', label: 'refresh token lifetime', default: 30 * DAY_MS, min: SECOND_MS, max: MAX_LIFETIME_MS },
  rotationRaceWindowMs: {
    kind: 'duration',
    // Allows for the clock skew between nodes and for a request that waited in a busy server.
    summary: 'With rotation: a replaced refresh token presented at most this long after its replacement is a lost race (refused, nothing revoked), not reuse',
    label: 'rotation race window',
    default: 2 * SECOND_MS,
    min: 0,
    max: 60 * SECOND_MS,
  },
  ssfPrivateNetwork: {
    kind: 'boolean',
    // An SSF stream's push endpoint is chosen by a client over HTTP: private addresses are a
    // server-side request forgery unless the operator says they are where receivers live.
    summary: 'Let SSF stream management (POST /ssf/stream) make push streams to endpoints on a private network (loopback, RFC 1918, unique local); link-local and metadata addresses never',
    default: false,
  },
  eventLagWarningMs: {
    kind: 'duration',
    // A cache that hears of a revocation this late serves the revoked token meanwhile: a minute
    // is long past what a receiver keeping up takes (well under a second), short of an outage.
    summary: "Security events: warn (serve's log, tokenctl status) when a receiver's oldest pending delivery is older than this",
    label: 'event lag warning',
    group: 'EVENTS',
    default: MINUTE_MS,
    min: SECOND_MS,
    max: 7 * DAY_MS,
  },
} as const satisfies Record<string, Setting>;

export type EngineSettingName = keyof typeof ENGINE_SETTINGS;

type ValueOf<S extends Setting> = S extends { kind: 'string' } ? string : S extends { kind: 'boolean' } ? boolean : number;

/** Settings of one engine: every one of {@link ENGINE_SETTINGS}, with its value. */
export type EngineConfig = { -readonly [K in EngineSettingName]: ValueOf<(typeof ENGINE_SETTINGS)[K]> };

/**
 * The configuration of an engine: each setting given, else its default. Throws
 * {@link InvalidInputError} for a value out of its range, saying the range.
 */
export function engineConfig(given: Partial<EngineConfig>): EngineConfig {
  const config: Record<string, unknown> = {};
  for (const [name, setting] of Object.entries(ENGINE_SETTINGS) as [EngineSettingName, Setting][]) {
    const value = given[name] ?? setting.default;
    if ((setting.kind === 'integer' || setting.kind === 'duration') && !inRange(setting, value as number)) {
      throw new InvalidInputError(`the ${setting.label} must be ${setting.kind === 'integer' ? 'a whole number ' : ''}between ${rangeOf(setting)}`);
    }
    config[name] = value;
  }
  return config as EngineConfig;
}

function inRange(setting: { kind: 'integer' | 'duration'; min: number; max: number }, value: number): boolean {
  return value >= setting.min && value <= setting.max && (setting.kind !== 'integer' || Number.isInteger(value));
}

/** A setting's range as the operator reads it: `0s and 60s`, `0 and 1000000`. */
export function rangeOf(setting: { kind: 'integer' | 'duration'; min: number; max: number }): string {
  return `${shownValue(setting, setting.min)} and ${shownValue(setting, setting.max)}`;
}

/**
 * A value of `setting` as the operator writes it: a duration in its largest whole unit (`2s`,
 * `60s`, `15m`, `1h`, `30d`; a minute or less in seconds).
 */
export function shownValue(setting: Pick<Setting, 'kind'>, value: string | number | boolean): string {
  if (setting.kind !== 'duration' || typeof value !== 'number') return String(value);
  if (value % DAY_MS === 0 && value > 0) return `${value / DAY_MS}d`;
  if (value % HOUR_MS === 0 && value > 0) return `${value / HOUR_MS}h`;
  if (value % MINUTE_MS === 0 && value > MINUTE_MS) return `${value / MINUTE_MS}m`;
  return value % SECOND_MS === 0 ? `${value / SECOND_MS}s` : `${value}ms`;
}
