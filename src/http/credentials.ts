import { formCredentials, parseBasicAuthorization, type PresentedCredentials } from '../engine/client-auth.js';
import { InvalidRequestError } from '../engine/errors.js';
import { optional } from '../engine/parameters.js';
import type { EndpointRequest } from './request.js';
import { UnsupportedClientAuthError } from './transport-errors.js';

/** Where a request carries a client's credentials: the Authorization header, and the form. */
type CredentialSources = Pick<EndpointRequest, 'headers' | 'form'>;

/**
 * Client authentication at POST /oauth/token (spec part 5, contract 3), in this order:
 * the `Authorization: Basic` header (spec scenario I, scenario II, or RFC 6749 §2.3.1, all read
 * by {@link parseBasicAuthorization}); else the form parameters `client_id` and `client_secret`
 * (RFC 6749 §2.3.1 `client_secret_post`, contract 3: the default, or only, mode of
 * many client libraries); else a public client's `client_id` alone.
 * RFC 6749 §2.3: one method per request, so a form `client_secret` beside the header, or a
 * form `client_id` naming another client, is refused (400 invalid_request).
 */
export function tokenEndpointCredentials({ headers, form }: CredentialSources): PresentedCredentials {
  const header = headers.authorization;
  const clientId = optional(form, 'client_id');
  const clientSecret = optional(form, 'client_secret');
  if (header !== undefined) return fromHeader(header, clientId, clientSecret);
  if (clientId === undefined) {
    throw new UnsupportedClientAuthError(
      '',
      clientSecret === undefined
        ? 'Client authentication is required: send the Authorization header of spec part 5, or the form parameters client_id and client_secret'
        : 'The parameter client_id is missing: client_secret alone does not say which client it authenticates',
    );
  }
  return formCredentials(clientId, clientSecret);
}

/**
 * Client authentication at POST /oauth/revocation and /oauth/introspection: the form parameters
 * `client_id` and `client_secret` (spec part 5), or instead RFC 6749 `Authorization: Basic`
 * (contract 3). A missing `client_id` without a header is a 400 naming it.
 */
export function endpointCredentials({ headers, form }: CredentialSources): PresentedCredentials {
  const header = headers.authorization;
  const clientId = optional(form, 'client_id');
  const clientSecret = optional(form, 'client_secret');
  if (header === undefined) return formCredentials(clientId, clientSecret);
  return fromHeader(header, clientId, clientSecret);
}

function fromHeader(header: string, clientId: string | undefined, clientSecret: string | undefined): PresentedCredentials {
  const credentials = parseBasicAuthorization(header);
  if (clientId !== undefined && clientId !== credentials.clientId) {
    throw new InvalidRequestError('The parameter client_id names another client than the Authorization header', 'client_id');
  }
  if (clientSecret !== undefined) {
    throw new InvalidRequestError('Authenticate the client once: with the Authorization header or with client_secret, not both', 'client_secret');
  }
  return credentials;
}
