import { REVOCATION_PATH } from '../paths.js';
import { presentedTokenEndpoint } from './presented-token.js';

/** POST /oauth/revocation, spec 4.2 (RFC 7009): a client revokes one of its own tokens; answers spec 2.2. */
export const revocation = presentedTokenEndpoint(REVOCATION_PATH, (engine, request) => engine.revokeAsClient(request));
