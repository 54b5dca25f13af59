import { authorizationCodeGrant } from './authorization-code.js';
import { clientCredentialsGrant } from './client-credentials.js';
import { grantTable } from './grant.js';
import { refreshTokenGrant } from './refresh-token.js';

export { clientMayUse, grantTable, parseTokenRequest, type Grant, type GrantTable, type ParsedGrant } from './grant.js';
export { refreshGrant, refreshTokenGrant } from './refresh-token.js';
export { authorizationCodeGrant, codeGrant } from './authorization-code.js';
export { clientCredentialsGrant } from './client-credentials.js';

/** The grant types POST /oauth/token serves (and the RFC 8414 metadata lists): one row each. */
export const GRANTS = grantTable(authorizationCodeGrant, refreshTokenGrant, clientCredentialsGrant);
