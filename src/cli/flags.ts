import { Flags } from '@oclif/core';
import { EVENTS_SUPPORTED, SESSION_REVOKED, TOKENS_REVOKED } from '../engine/stream-settings.js';
import { isWellFormedToken } from '../engine/tokens.js';
import { MAX_LIFETIME_MS, parseDuration } from './duration.js';
import { CliError, EXIT } from './errors.js';
import { describeBadToken } from './token-input.js';

/**
 * Shared flag definitions, so that every command spells and describes them the same way.
 */

/** `receiver add/update --retention`: how long a delivery may stay pending (engine/receivers.ts checks the range). */
export const receiverRetentionFlag = Flags.custom<number>({
  helpValue: '<duration>',
  parse: async (input: string) => parseDuration(input),
  description: 'Deliveries pending longer than this (from their event) become dead letters, poll and push alike; 1m to 90d [default: 24h]',
});

/** Short names `receiver add/update --events` accepts for the supported event types. */
const EVENT_NAMES: Record<string, string> = { 'tokens-revoked': TOKENS_REVOKED, 'session-revoked': SESSION_REVOKED };

/**
 * `receiver add/update --events`: SSF `events_requested`, comma-separated (the engine checks it as
 * the stream API does). A value is a short name or an absolute URI; a list of which tokenctl sends
 * nothing is refused here, since an operator's receiver would silently get no events at all.
 */
export const receiverEventsFlag = Flags.custom<string[]>({
  helpValue: '<list>',
  parse: async (input: string) => {
    const events = input.split(',').map((e) => e.trim()).map((e) => {
      const uri = EVENT_NAMES[e] ?? e;
      // An empty item is left to the engine's check, which names the list's rules.
      if (uri !== '' && !/^[a-z][a-z0-9+.-]*:\S+$/i.test(uri)) throw new CliError(`--events: "${e}" is neither ${Object.keys(EVENT_NAMES).join(' nor ')} nor an event type URI`, EXIT.usage, 'bad_events');
      return uri;
    });
    if (!events.some((e) => EVENTS_SUPPORTED.includes(e))) {
      throw new CliError(`--events: tokenctl sends none of these events, so the receiver would get nothing: give ${Object.keys(EVENT_NAMES).join(' or ')}`, EXIT.usage, 'bad_events');
    }
    return events;
  },
  description: 'The events its SETs carry (SSF events_requested), comma-separated: tokens-revoked, session-revoked (CAEP), or event type URIs [default: tokens-revoked]',
});

/** `receiver add/update --alg`: the JWS algorithm of the receiver's SETs (the engine checks it). */
export const receiverAlgFlag = Flags.custom<string>({
  helpValue: 'ES256|RS256',
  parse: async (input: string) => input,
  description: 'The algorithm its SETs are signed with: ES256, or RS256 (the CAEP interoperability profile) [default: ES256]',
});

/** A duration (`90s`, `15m`, `1h`, `30d`, `1h30m`), parsed to milliseconds. */
export const durationFlag = Flags.custom<number>({
  helpValue: '<duration>',
  parse: async (input: string) => parseDuration(input),
});

/** `TOKENCTL_` and the flag's name in capitals, `-` as `_`: `--db-timeout` is TOKENCTL_DB_TIMEOUT. */
export function envName(flag: string): string {
  return `TOKENCTL_${flag.toUpperCase().replace(/-/g, '_')}`;
}

/**
 * `flags`, each also read from the environment as {@link envName} unless it names a variable of
 * its own (contract 6: a service manager or a container sets `serve` up with variables alone).
 * oclif shows the variable in the help, and a flag given on the command line wins.
 */
export function fromEnvironment<F extends Record<string, { env?: string }>>(flags: F): F {
  return Object.fromEntries(Object.entries(flags).map(([name, flag]) => [name, flag.env === undefined ? { ...flag, env: envName(name) } : flag])) as F;
}

/** The audit trail's retention unless `purge --audit-older-than` says otherwise: 400 days, over a year. */
export const DEFAULT_AUDIT_RETENTION_MS = 400 * 86_400_000;

/** A retention: a duration of at least a day, or `never` (null: keep everything). */
export const retentionFlag = Flags.custom<number | null>({
  helpValue: '<duration>|never',
  parse: async (input: string) => {
    if (input.trim() === 'never') return null;
    const ms = parseDuration(input);
    if (ms < 86_400_000) throw new CliError(`a retention of ${input} is shorter than a day: give at least 1d, or never`, EXIT.usage, 'bad_retention');
    return ms;
  },
});

/** A token lifetime: a duration of at most {@link MAX_LIFETIME_MS} (366d). */
export const lifetimeFlag = Flags.custom<number>({
  helpValue: '<duration>',
  parse: async (input: string) => parseDuration(input, MAX_LIFETIME_MS),
});

export const yesFlag = Flags.boolean({
  char: 'y',
  description: 'Go ahead without asking for confirmation (needed when there is no terminal)',
  default: false,
});

/**
 * `--bare`: only the values a script wants (a client id, the tokens, jtis), one line each, as
 * hydra's `--quiet` and gh's `--jq` give them: no table, no notice, no JSON to parse. A command
 * that takes it says which values (`static bare` of BaseCommand).
 */
export const bareFlag = Flags.boolean({
  description: 'Print only the bare values for scripts, one line each (see the description)',
  default: false,
  exclusive: ['json'],
});

export const dryRunFlag = Flags.boolean({
  description: 'Show what would change, and change nothing',
  default: false,
});

/** `--limit N`, at least 1. */
export function limitFlag(description: string) {
  return Flags.integer({ description, min: 1, helpValue: '<n>' });
}

export const hintFlag = Flags.string({
  description: 'token_type_hint: which kind of token this is (only a hint: the token is found whatever its type)',
  options: ['access_token', 'refresh_token'],
});

export const tokenTypeFlag = Flags.string({
  description: 'Only tokens of this type',
  options: ['access_token', 'refresh_token'],
});

export const stateFlag = Flags.string({
  description: 'Only tokens in this state',
  options: ['active', 'expired', 'revoked'],
});

/**
 * `--url` and the credentials that go with it: speak the HTTP protocol to a server instead of
 * opening a store. `--profile NAME` (or TOKENCTL_PROFILE) supplies any of them from a saved
 * profile; the client secret comes from TOKENCTL_CLIENT_SECRET, the profile, or a prompt without
 * echo at a terminal, so that it need not be on the command line. `refresh` also takes
 * `--client-id` alone, locally (`clientIdNeedsUrl: false`).
 */
export function remoteFlags(options: { clientIdNeedsUrl: boolean }) {
  return {
    url: Flags.string({
      description: 'Base URL of a token service (e.g. https://127.0.0.1:8443): send the request there instead of opening a store',
      helpGroup: 'REMOTE',
    }),
    profile: Flags.string({
      description: 'Use a saved profile (tokenctl profile add): its URL, client ID, CA and client secret; flags given override it',
      env: 'TOKENCTL_PROFILE',
      helpGroup: 'REMOTE',
      helpValue: '<name>',
    }),
    'client-id': Flags.string({
      description: options.clientIdNeedsUrl
        ? 'Client ID to authenticate as at --url'
        : 'Client ID to authenticate as; locally, the client must own the token',
      helpGroup: 'REMOTE',
    }),
    'client-secret': Flags.string({
      description: 'Client password (visible to other users in ps: prefer TOKENCTL_CLIENT_SECRET, a profile, or the prompt); omit for a public client',
      helpGroup: 'REMOTE',
    }),
    ca: Flags.string({
      description: 'PEM file of a CA to trust for the server certificate (e.g. the one serve --tls-self-signed writes)',
      helpGroup: 'REMOTE',
      helpValue: '<file>',
    }),
    timeout: durationFlag({
      description: 'With --url: give up when the server has not answered in full within this time [default: 10s]',
      helpGroup: 'REMOTE',
    }),
  };
}

/** `--dpop-key` and `--dpop-key-out` of `refresh --url` and `login` (RFC 9449): the key the token request proves. */
export function dpopFlags() {
  return {
    'dpop-key': Flags.string({
      description:
        'Send a DPoP proof (RFC 9449) signed with this private key (a JWK or PEM file), so that the server binds the tokens to it; "generate" makes a new P-256 key. Its thumbprint (cnf.jkt) is shown, never the key',
      helpGroup: 'DPOP',
      helpValue: '<file>|generate',
    }),
    'dpop-key-out': Flags.string({
      description: 'With --dpop-key generate: write the new private key there as a JWK (mode 0600, never overwriting a file), to refresh the bound tokens later; else it is kept in memory only',
      helpGroup: 'DPOP',
      helpValue: '<file>',
      dependsOn: ['dpop-key'],
    }),
  };
}

/**
 * Refuses, before any store is opened, a string that cannot be a tokenctl token (a pasted
 * JWT, a truncated token, a jti given where a token is expected).
 */
export function assertTokenShape(token: string): void {
  const problem = tokenShapeProblem(token);
  if (problem) throw new CliError(problem.message, EXIT.usage, 'malformed_token', problem.hint);
}

/** Why `token` (already cleaned of whitespace, quotes and `Bearer `) is not a tokenctl token, or undefined. */
export function tokenShapeProblem(token: string): { message: string; hint?: string } | undefined {
  if (isWellFormedToken(token)) return undefined;
  const hint = /^[0-9a-f]{8}-[0-9a-f]{4}-/i.test(token) ? 'this looks like a jti: use --jti' : undefined;
  const why = describeBadToken(token);
  return {
    message: `not a tokenctl token${why ? ` (${why})` : ''}: tokens start with tca_ (access) or tcr_ (refresh) followed by 43 characters`,
    hint,
  };
}
