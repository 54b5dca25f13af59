import type { ClientRequest } from '../../engine/client-requests.js';
import type { Engine } from '../../engine/engine.js';
import { required } from '../../engine/parameters.js';
import type { ClientOutcome } from '../../engine/results.js';
import { endpointCredentials } from '../credentials.js';
import { tokenTypeHint } from '../form.js';
import type { Endpoint } from './endpoint.js';

/**
 * Revocation and introspection (spec 4.2, 4.3) read the same request: `token`, an optional
 * `token_type_hint`, and the client's credentials (spec part 5: form parameters, or instead
 * `Authorization: Basic`). `call` is the endpoint's one engine call.
 */
export function presentedTokenEndpoint(path: string, call: (engine: Engine, request: ClientRequest) => Promise<ClientOutcome<unknown>>): Endpoint {
  return {
    path,
    // Not async: what it throws before the engine call is caught by the handler all the same.
    run(engine, request) {
      const token = required(request.form, 'token');
      tokenTypeHint(request.form); // optional and checked (contract 3), but only a hint: the token is found whatever its type
      return call(engine, { credentials: endpointCredentials(request), token, source: request.peer, log: request });
    },
  };
}
