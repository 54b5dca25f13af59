import { endpointCredentials } from '../credentials.js';
import { required, tokenTypeHint } from '../form.js';
import { INTROSPECTION_PATH } from '../paths.js';
import type { Endpoint } from './endpoint.js';

/** POST /oauth/introspection, spec 4.3 (RFC 7662): answers spec 2.3. */
export const introspection: Endpoint = {
  path: INTROSPECTION_PATH,
  async run(engine, form, authorization, ip) {
    const token = required(form, 'token');
    tokenTypeHint(form); // optional and checked (contract 3), but only a hint: the token is found whatever its type
    return engine.introspectAsClient({ credentials: endpointCredentials(authorization, form), token, source: ip });
  },
};
