/** The endpoints of spec part 4 and contract 3. */
export const TOKEN_PATH = '/oauth/token';
export const REVOCATION_PATH = '/oauth/revocation';
export const INTROSPECTION_PATH = '/oauth/introspection';
/** The authorization code flow (contract 5): RFC 6749 §3.1, and the browser's return from the login app. */
export const AUTHORIZE_PATH = '/oauth/authorize';
import { CONTINUE_PATH } from '../engine/authorization/index.js';
export const AUTHORIZE_CONTINUE_PATH = CONTINUE_PATH;
/** The login app's back channel: GET …/:challenge, POST …/:challenge/accept and …/reject. */
export const LOGIN_REQUESTS_PATH = '/oauth/login-requests';
/** The development login page of `serve --dev-login` and `--demo`. */
export const DEV_LOGIN_PATH = '/oauth/dev-login';
/** RFC 8414 §3. */
export const METADATA_PATH = '/.well-known/oauth-authorization-server';
/** Contract 6: liveness (no store call) and readiness; `/healthz` is readiness under its older name. */
export const LIVE_PATH = '/health/live';
export const READY_PATH = '/health/ready';
export const HEALTH_PATH = '/healthz';
/** Security events (routes/security-events.ts). RFC 8936 poll endpoint. */
export const POLL_PATH = '/events/poll';
/** RFC 7517 key set of the SET signing keys. */
export const JWKS_PATH = '/.well-known/jwks.json';
/** OpenID SSF 1.0 §7.1 transmitter metadata. */
export const SSF_CONFIGURATION_PATH = '/.well-known/ssf-configuration';
/** OpenID SSF 1.0 §8.1.1 configuration endpoint, §8.1.2 status endpoint, §8.1.4.2 verification endpoint. */
export const SSF_STREAM_PATH = '/ssf/stream';
export const SSF_STATUS_PATH = '/ssf/status';
export const SSF_VERIFY_PATH = '/ssf/verify';

/** The methods each path answers (for 405 and its `Allow` header). */
export const ALLOWED_METHODS: ReadonlyMap<string, string> = new Map([
  [TOKEN_PATH, 'POST'],
  [AUTHORIZE_PATH, 'GET'],
  [AUTHORIZE_CONTINUE_PATH, 'GET'],
  [DEV_LOGIN_PATH, 'GET, POST'],
  [REVOCATION_PATH, 'POST'],
  [INTROSPECTION_PATH, 'POST'],
  [METADATA_PATH, 'GET, HEAD'],
  [LIVE_PATH, 'GET, HEAD'],
  [READY_PATH, 'GET, HEAD'],
  [HEALTH_PATH, 'GET, HEAD'],
  [POLL_PATH, 'POST'],
  [JWKS_PATH, 'GET, HEAD'],
  [SSF_CONFIGURATION_PATH, 'GET, HEAD'],
  [SSF_STREAM_PATH, 'GET, HEAD, POST, PATCH, PUT, DELETE'],
  [SSF_STATUS_PATH, 'GET, HEAD, POST'],
  [SSF_VERIFY_PATH, 'POST'],
]);
