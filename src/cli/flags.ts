import { Flags } from '@oclif/core';
import { isWellFormedToken } from '../engine/tokens.js';
import { parseDuration } from './duration.js';
import { CliError, EXIT } from './errors.js';

/**
 * Shared flag definitions, so that every command spells and describes them the same way.
 */

/** A duration (`90s`, `15m`, `1h`, `30d`, `1h30m`), parsed to milliseconds. */
export const durationFlag = Flags.custom<number>({
  helpValue: '<duration>',
  parse: async (input: string) => parseDuration(input),
});

export const yesFlag = Flags.boolean({
  char: 'y',
  description: 'Go ahead without asking for confirmation (needed when there is no terminal)',
  default: false,
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
 * `--url` and the credentials that go with it: speak the HTTP protocol (spec part 4) to a server
 * instead of opening a store. `refresh` also takes `--client-id` alone, locally
 * (`clientIdNeedsUrl: false`); `revoke` and `introspect` only with `--url`.
 */
export function remoteFlags(options: { clientIdNeedsUrl: boolean }) {
  return {
    url: Flags.string({
      description: 'Base URL of a token service (e.g. https://127.0.0.1:8443): send the request there instead of opening a store',
      helpGroup: 'REMOTE',
    }),
    'client-id': Flags.string({
      description: options.clientIdNeedsUrl
        ? 'Client ID to authenticate as at --url (spec part 5)'
        : 'Client ID to authenticate as (spec part 5); locally, the client must own the token',
      helpGroup: 'REMOTE',
      ...(options.clientIdNeedsUrl ? { dependsOn: ['url'] } : {}),
    }),
    'client-secret': Flags.string({
      description: 'Client password; omit for a public client',
      helpGroup: 'REMOTE',
      dependsOn: ['client-id'],
    }),
    ca: Flags.string({
      description: 'PEM file of a CA to trust for the server certificate (e.g. the one serve --tls-self-signed writes)',
      helpGroup: 'REMOTE',
      dependsOn: ['url'],
      helpValue: '<file>',
    }),
  };
}

/**
 * Refuses, before any store is opened, a string that cannot be a tokenctl token (a pasted
 * JWT, a truncated token, a jti given where a token is expected).
 */
export function assertTokenShape(token: string): void {
  if (isWellFormedToken(token)) return;
  const hint = /^[0-9a-f]{8}-[0-9a-f]{4}-/i.test(token) ? 'this looks like a jti: use --jti' : undefined;
  throw new CliError(
    'not a tokenctl token: tokens start with tca_ (access) or tcr_ (refresh) followed by 43 characters',
    EXIT.usage,
    'malformed_token',
    hint,
  );
}
