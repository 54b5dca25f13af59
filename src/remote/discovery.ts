import { absoluteUrl, endpointUrl, RemoteError, remoteGetJson, sanitize, type RemoteOptions } from './http-client.js';
import { LoginError } from './login-error.js';

/** What the flow needs of the server's metadata. */
export interface ServerMetadata {
  issuer: string;
  authorizationEndpoint: URL;
  tokenEndpoint: URL;
  /** RFC 9207 §3: the server promises `iss` in every authorization response. */
  issParameterSupported: boolean;
}

/** RFC 8414 §3: the metadata at the issuer's well-known URL, checked for what the flow needs. */
export async function discover(remote: RemoteOptions): Promise<ServerMetadata> {
  const doc = await fetchMetadata(remote);
  const issuer = typeof doc.issuer === 'string' ? doc.issuer : '';
  // §3.3: metadata naming another issuer must not be used (a mix-up, or the wrong --url).
  if (trimSlash(issuer) !== trimSlash(remote.url)) {
    const named = JSON.stringify(sanitize(issuer));
    throw new LoginError(`the server's metadata names the issuer ${named}, not ${remote.url} (RFC 8414 §3.3)`, 'issuer_mismatch', issuer ? `use --url ${sanitize(issuer) as string}` : undefined);
  }
  if (doc.authorization_endpoint === undefined) {
    throw new LoginError(`${issuer} has no login: its metadata has no authorization_endpoint`, 'no_login', 'its operator can start it with --login-url URL (their login app), --dev-login or --demo (development only)');
  }
  const methods = doc.code_challenge_methods_supported;
  if (Array.isArray(methods) && !methods.includes('S256')) {
    throw new LoginError(`${issuer} does not offer PKCE with S256 (code_challenge_methods_supported: ${JSON.stringify(sanitize(methods))})`, 'bad_metadata');
  }
  try {
    return {
      issuer,
      authorizationEndpoint: absoluteUrl(doc.authorization_endpoint, 'authorization_endpoint'),
      tokenEndpoint: absoluteUrl(doc.token_endpoint, 'token_endpoint'),
      issParameterSupported: doc.authorization_response_iss_parameter_supported === true,
    };
  } catch (err) {
    if (err instanceof RemoteError) throw new LoginError(err.message, 'bad_metadata');
    throw err;
  }
}

/**
 * RFC 8414 §3.1: `/.well-known/oauth-authorization-server` goes between the host and the issuer's
 * path; for an issuer with a path, the same name under that path is tried next, where a server
 * behind a proxy that adds the path prefix answers it.
 */
async function fetchMetadata(remote: RemoteOptions): Promise<Record<string, unknown>> {
  const root = endpointUrl(remote.url, '');
  const path = root.pathname.replace(/\/+$/, '');
  const candidates = [new URL(`${METADATA}${path}`, root), ...(path === '' ? [] : [new URL(`${path}${METADATA}`, root)])];
  for (const url of candidates) {
    try {
      return await remoteGetJson(remote, url);
    } catch (err) {
      if (!(err instanceof RemoteError && err.status === 404)) throw err;
    }
  }
  const tried = candidates.map((u) => u.href).join(' and ');
  throw new LoginError(`${root.origin} publishes no authorization server metadata (GET ${tried} answered 404)`, 'bad_metadata', 'is --url the base URL of a tokenctl server (or another RFC 8414 authorization server)?');
}

const METADATA = '/.well-known/oauth-authorization-server';

function trimSlash(url: string): string {
  return url.replace(/\/+$/, '');
}
