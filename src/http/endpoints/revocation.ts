import { endpointCredentials } from '../credentials.js';
import { required, tokenTypeHint } from '../form.js';
import { REVOCATION_PATH } from '../paths.js';
import type { Endpoint } from './endpoint.js';

/** POST /oauth/revocation, spec 4.2 (RFC 7009): a client revokes one of its own tokens; answers spec 2.2. */
export const revocation: Endpoint = {
  path: REVOCATION_PATH,
  async run(engine, form, authorization, ip) {
    const token = required(form, 'token');
    tokenTypeHint(form); // optional and checked (contract 3), but only a hint: the token is found whatever its type
    return engine.revokeAsClient({ credentials: endpointCredentials(authorization, form), token, source: ip });
  },
};
