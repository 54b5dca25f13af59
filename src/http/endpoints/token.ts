import { tokenEndpointCredentials } from '../credentials.js';
import { TOKEN_PATH } from '../paths.js';
import type { Endpoint } from './endpoint.js';

/**
 * POST /oauth/token (spec 4.1, RFC 6749 §3.2): the grant the form asks for, read and checked by
 * the engine's grant table (`engine/grants/`), then the client's credentials, then one engine
 * call; answers spec 2.1.
 */
export const token: Endpoint = {
  path: TOKEN_PATH,
  // Not async: what it throws before the engine call is caught by the handler all the same.
  run(engine, request) {
    const grant = engine.tokenRequest(request.form);
    return engine.tokenAsClient({ grant, credentials: tokenEndpointCredentials(request), source: request.peer, log: request });
  },
};
