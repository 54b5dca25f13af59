/** The endpoints of spec part 4 and contract 3. */
export const TOKEN_PATH = '/oauth/token';
export const REVOCATION_PATH = '/oauth/revocation';
export const INTROSPECTION_PATH = '/oauth/introspection';
/** RFC 8414 §3. */
export const METADATA_PATH = '/.well-known/oauth-authorization-server';
export const HEALTH_PATH = '/healthz';

/** The methods each path answers (for 405 and its `Allow` header). */
export const ALLOWED_METHODS: ReadonlyMap<string, string> = new Map([
  [TOKEN_PATH, 'POST'],
  [REVOCATION_PATH, 'POST'],
  [INTROSPECTION_PATH, 'POST'],
  [METADATA_PATH, 'GET, HEAD'],
  [HEALTH_PATH, 'GET, HEAD'],
]);
