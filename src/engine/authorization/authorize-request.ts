import type { ClientRecord } from '../../store/store.js';
import { narrowScope } from '../issue.js';
import { InvalidScopeError } from '../errors.js';
import { isDpopJkt } from './code-binding.js';
import { isPkceValue } from './pkce.js';
import { matchRedirectUri } from './redirect-uris.js';

/** The query of `GET /oauth/authorize` as decoded name/value pairs, in order (a name may repeat). */
export type QueryPairs = ReadonlyArray<readonly [string, string]>;

/** An authorization request (RFC 6749 §4.1.1, RFC 7636 §4.3) that may go on to the login. */
export interface AuthorizeRequest {
  client: ClientRecord;
  redirectUri: string;
  redirectUriSent: boolean;
  scope: string;
  state: string | null;
  codeChallenge: string;
  /** RFC 9449 §10 `dpop_jkt`: the DPoP key the code is bound to, or null. */
  dpopJkt: string | null;
}

/**
 * Why an authorization request stops, and where it is told (RFC 6749 §4.1.2.1): on a page in the
 * browser when the client or its redirect URI cannot be trusted (never a redirect to a URI that
 * is not registered), otherwise to the redirect URI, with `state`.
 */
export type AuthorizeRefusal =
  | { to: 'page'; error: string; description: string }
  | { to: 'redirect'; redirectUri: string; state: string | null; error: string; description: string };

/** The longest `state` kept: it is stored with the request and sent back in a URL. */
export const MAX_STATE_LENGTH = 2048;

/** The parameters read once each; the rest are ignored (RFC 6749 §3.1: "MUST ignore unrecognized request parameters"). */
const READ = ['client_id', 'redirect_uri', 'response_type', 'scope', 'state', 'code_challenge', 'code_challenge_method', 'dpop_jkt'] as const;
type Read = (typeof READ)[number];

interface Values {
  values: Partial<Record<Read, string>>;
  /** The parameters given more than once (RFC 6749 §3.1: "MUST NOT be included more than once"). */
  repeated: Set<Read>;
}

function collect(pairs: QueryPairs): Values {
  const values: Partial<Record<Read, string>> = {};
  const repeated = new Set<Read>();
  for (const [name, value] of pairs) {
    if (!(READ as readonly string[]).includes(name)) continue;
    const key = name as Read;
    if (key in values) repeated.add(key);
    // An empty value counts as omitted (RFC 6749 §3.1).
    if (value !== '') values[key] = value;
    else if (!(key in values)) values[key] = undefined;
  }
  return { values, repeated };
}

/** The client id the request names, or the page refusal of a request that names none, or several. */
export function authorizeClientId(pairs: QueryPairs): { clientId: string } | { refusal: AuthorizeRefusal } {
  const { values, repeated } = collect(pairs);
  if (repeated.has('client_id')) return { refusal: { to: 'page', error: 'invalid_request', description: 'The parameter client_id is given more than once' } };
  const clientId = values.client_id;
  if (clientId === undefined) return { refusal: { to: 'page', error: 'invalid_request', description: 'The parameter client_id is missing' } };
  return { clientId };
}

/**
 * Checks an authorization request of `client`, the client its `client_id` names (null: none).
 * First what decides
 * whether the browser may be sent back at all (the client, its redirect URI), told on a page;
 * then the rest, told to the redirect URI.
 */
export function checkAuthorizeRequest(pairs: QueryPairs, client: ClientRecord | null): { request: AuthorizeRequest } | { refusal: AuthorizeRefusal } {
  const { values, repeated } = collect(pairs);
  const page = (description: string, error = 'invalid_request'): { refusal: AuthorizeRefusal } => ({ refusal: { to: 'page', error, description } });
  if (repeated.has('client_id')) return page('The parameter client_id is given more than once');
  if (values.client_id === undefined) return page('The parameter client_id is missing');
  if (client === null || client.id !== values.client_id) return page(`There is no client "${(values.client_id ?? '').slice(0, 100)}": the application that sent you here is not registered`, 'invalid_client');
  if (repeated.has('redirect_uri')) return page('The parameter redirect_uri is given more than once');
  const sent = values.redirect_uri;
  let redirectUri: string;
  if (sent === undefined) {
    if (client.redirectUris.length !== 1) {
      return page(client.redirectUris.length === 0 ? `Client "${client.id}" has no redirect URI registered` : 'The parameter redirect_uri is missing (the client registered several)');
    }
    redirectUri = client.redirectUris[0]!;
  } else {
    const matched = matchRedirectUri(client.redirectUris, sent);
    if (matched === null) return page(`The redirect URI "${sent.slice(0, 200)}" is not registered for client "${client.id}"`);
    redirectUri = matched;
  }

  // From here the redirect URI is trusted: errors go back to the client (RFC 6749 §4.1.2.1).
  const stateValue = repeated.has('state') ? undefined : values.state;
  const state = stateValue !== undefined && stateValue.length <= MAX_STATE_LENGTH ? stateValue : null;
  const back = (error: string, description: string): { refusal: AuthorizeRefusal } => ({ refusal: { to: 'redirect', redirectUri, state, error, description } });
  const firstRepeated = READ.find((name) => repeated.has(name));
  if (firstRepeated !== undefined) return back('invalid_request', `The parameter ${firstRepeated} is given more than once`);
  if (stateValue !== undefined && stateValue.length > MAX_STATE_LENGTH) return back('invalid_request', `The parameter state is longer than ${MAX_STATE_LENGTH} characters`);
  if (values.response_type === undefined) return back('invalid_request', 'The parameter response_type is missing: use response_type=code');
  if (values.response_type !== 'code') return back('unsupported_response_type', `response_type "${values.response_type.slice(0, 50)}" is not supported: use response_type=code`);
  if (!client.grantTypes.includes('authorization_code')) return back('unauthorized_client', `Client "${client.id}" may not use the authorization code grant`);
  const challenge = values.code_challenge;
  if (challenge === undefined) return back('invalid_request', 'PKCE is required: send code_challenge and code_challenge_method=S256 (RFC 7636)');
  const method = values.code_challenge_method;
  if (method !== 'S256') {
    return back('invalid_request', method === undefined || method === 'plain' ? 'code_challenge_method must be S256 (plain is not accepted, RFC 9700 §2.1.1)' : `code_challenge_method "${method.slice(0, 50)}" is not supported: use S256`);
  }
  if (challenge.length !== 43 || !isPkceValue(challenge)) return back('invalid_request', 'code_challenge must be the 43-character base64url SHA-256 of the code verifier (RFC 7636 §4.2)');
  const dpopJkt = values.dpop_jkt ?? null;
  if (dpopJkt !== null && !isDpopJkt(dpopJkt)) {
    return back('invalid_request', 'dpop_jkt must be the 43-character base64url SHA-256 JWK thumbprint (RFC 7638) of the DPoP key the code is to be bound to (RFC 9449 §10)');
  }
  let scope: string;
  try {
    scope = narrowScope(values.scope, client.scope, true);
  } catch (err) {
    if (err instanceof InvalidScopeError) return back('invalid_scope', err.message);
    throw err;
  }
  return { request: { client, redirectUri, redirectUriSent: sent !== undefined, scope, state, codeChallenge: challenge, dpopJkt } };
}
