import { InvalidRequestError, UnsupportedGrantTypeError } from '../../engine/errors.js';
import { tokenEndpointCredentials } from '../credentials.js';
import { optional, required } from '../form.js';
import { TOKEN_PATH } from '../paths.js';
import type { Endpoint } from './endpoint.js';

/** POST /oauth/token, spec 4.1: grant_type=refresh_token (RFC 6749 §6); answers spec 2.1. */
export const token: Endpoint = {
  path: TOKEN_PATH,
  // Not async: what it throws before the engine call is caught by the handler all the same.
  run(engine, form, authorization, ip) {
    const grantType = form.grant_type;
    if (grantType === undefined || grantType === '') throw new InvalidRequestError('The parameter grant_type is missing', 'grant_type');
    if (grantType !== 'refresh_token') throw new UnsupportedGrantTypeError(grantType);
    const refreshToken = required(form, 'refresh_token');
    const scope = optional(form, 'scope');
    return engine.refreshAsClient({ credentials: tokenEndpointCredentials(authorization, form), token: refreshToken, scope, source: ip });
  },
};
