/** Why `tokenctl login` stopped (src/remote/login-flow.ts), apart from the HTTP client's RemoteError. */
export type LoginErrorCode =
  | 'no_login'
  | 'bad_metadata'
  | 'issuer_mismatch'
  | 'port_unavailable'
  | 'state_mismatch'
  | 'iss_mismatch'
  | 'authorization_error'
  | 'bad_response'
  | 'timeout'
  | 'interrupted';

/** The flow stopped: `code` says why, `hint` what to do; `error` is the server's RFC 6749 §4.1.2.1 code when it sent one. */
export class LoginError extends Error {
  constructor(
    message: string,
    readonly code: LoginErrorCode,
    readonly hint?: string,
    readonly error?: { error: string; error_description?: string; error_uri?: string },
  ) {
    super(message);
    this.name = 'LoginError';
  }
}
