import { INTROSPECTION_PATH } from '../paths.js';
import { presentedTokenEndpoint } from './presented-token.js';

/** POST /oauth/introspection, spec 4.3 (RFC 7662): answers spec 2.3. */
export const introspection = presentedTokenEndpoint(INTROSPECTION_PATH, (engine, request) => engine.introspectAsClient(request));
