import type { ClientRecord, ClientSettings } from '../store/store.js';
import { validateRedirectUri } from './authorization/redirect-uris.js';
import { InvalidInputError } from './errors.js';

/**
 * The grant types a client may be given (RFC 7591 §2 `grant_types`), each a row of the engine's
 * grant table (`grants/index.ts`).
 */
export const CLIENT_GRANT_TYPES = ['authorization_code', 'refresh_token', 'client_credentials'] as const;
export type ClientGrantType = (typeof CLIENT_GRANT_TYPES)[number];

/** What an operator asks for a client's settings; what is left out keeps its value (or the default). */
export interface ClientSettingsInput {
  redirectUris?: readonly string[];
  grantTypes?: readonly string[];
  loginProvider?: boolean;
  /** Refuse token requests without a DPoP proof (contract 8). */
  requireDpop?: boolean;
}

/** A client's settings as a new client gets them, before {@link checkClientSettings}. */
export function defaultSettings(input: ClientSettingsInput): ClientSettings {
  const redirectUris = input.redirectUris ?? [];
  // A client registered with a redirect URI is one that logs users in: give it the code flow
  // and refresh; without one it has what every client had before issuance (contract 5).
  const grantTypes = input.grantTypes ?? (redirectUris.length > 0 ? ['authorization_code', 'refresh_token'] : ['refresh_token']);
  return { redirectUris: [...redirectUris], grantTypes: [...grantTypes], loginProvider: input.loginProvider ?? false, requireDpop: input.requireDpop ?? false };
}

/**
 * Checks settings for the client `client` (public or not) and returns them as stored: the
 * redirect URIs validated (redirect-uris.ts) without duplicates, known grant types only, and
 * the combinations that would never work refused with what to do instead.
 */
export function checkClientSettings(settings: ClientSettings, client: Pick<ClientRecord, 'secretHash'>): ClientSettings {
  const redirectUris = [...new Set(settings.redirectUris.map(validateRedirectUri))];
  const grantTypes = [...new Set(settings.grantTypes.map((g) => g.trim()))];
  for (const g of grantTypes) {
    if (!(CLIENT_GRANT_TYPES as readonly string[]).includes(g)) {
      throw new InvalidInputError(`"${g}" is not a grant type tokenctl serves: use ${CLIENT_GRANT_TYPES.join(', ')}`);
    }
  }
  if (grantTypes.length === 0) throw new InvalidInputError(`a client needs at least one grant type: ${CLIENT_GRANT_TYPES.join(', ')}`);
  const isPublic = client.secretHash === null;
  if (grantTypes.includes('authorization_code') && redirectUris.length === 0) {
    throw new InvalidInputError('the authorization_code grant needs at least one redirect URI: add --redirect-uri URI');
  }
  if (isPublic && grantTypes.includes('client_credentials')) {
    throw new InvalidInputError('a public client cannot use client_credentials (RFC 6749 §4.4: confidential clients only): drop --public or that grant type');
  }
  if (isPublic && settings.loginProvider) {
    throw new InvalidInputError('a login provider authenticates with a secret: a public client cannot be one (drop --public)');
  }
  return { redirectUris, grantTypes, loginProvider: settings.loginProvider, requireDpop: settings.requireDpop };
}
