import { tokenEndpointCredentials } from '../credentials.js';
import { TOKEN_PATH } from '../paths.js';
import type { Endpoint } from './endpoint.js';

/** The token endpoint's URL for `issuer`, as the RFC 8414 metadata names it. */
export function tokenEndpointUrl(issuer: string): string {
  return issuer.replace(/\/+$/, '') + TOKEN_PATH;
}

/**
 * POST /oauth/token (spec 4.1, RFC 6749 §3.2): the grant the form asks for, read and checked by
 * the engine's grant table (`engine/grants/`), then the client's credentials, then one engine
 * call; answers spec 2.1. A `DPoP` header goes to the engine with the URL its proof must name.
 */
export const token: Endpoint = {
  path: TOKEN_PATH,
  // Not async: what it throws before the engine call is caught by the handler all the same.
  run(engine, request) {
    const grant = engine.tokenRequest(request.form);
    // RFC 9449 §4.3 point 9: `htu` names the endpoint as the metadata does, from the issuer.
    const dpop = request.headers.dpop === undefined ? undefined : { header: request.headers.dpop, method: request.method, url: tokenEndpointUrl(engine.config.issuer) };
    return engine.tokenAsClient({ grant, credentials: tokenEndpointCredentials(request), source: request.peer, log: request, dpop });
  },
};
