import type { ClientRecord, TokenStore } from '../../store/store.js';
import type { PresentedCredentials } from '../client-auth.js';
import type { EngineContext } from '../context.js';
import { AccessDeniedError } from '../errors.js';
import { authorizeClientId, checkAuthorizeRequest, type AuthorizeRefusal, type AuthorizeRequest, type QueryPairs } from './authorize-request.js';
import * as flow from './flow.js';

export { CONTINUE_PATH, type ContinueOutcome, type LoginAnswer, type LoginRequestView, type StartedAuthorization } from './flow.js';
export type { AuthorizeRefusal, AuthorizeRequest, QueryPairs } from './authorize-request.js';

/** The development page as a login provider: never stored, never authenticated over HTTP. */
const BUILT_IN_PROVIDER: ClientRecord = {
  id: 'serve:dev-login',
  name: 'development login',
  secretHash: null,
  scope: '',
  orgId: '',
  audience: '',
  accessTtlMs: null,
  refreshTtlMs: null,
  createdAt: 0,
  secretUpdatedAt: 0,
  redirectUris: [],
  grantTypes: [],
  loginProvider: true,
  requireDpop: false,
};

/** How the login app's back channel authenticates (the engine's client authentication). */
type Authenticate = (credentials: PresentedCredentials, source?: string) => Promise<ClientRecord>;

/**
 * The authorization code flow's front and back channel (RFC 6749 §4.1, contract 5), as
 * `Engine.authorization`: the authorize request, the login app's calls, the browser's return.
 * The code's exchange is a grant of the token endpoint (`grants/authorization-code.ts`).
 */
export class AuthorizationFlow {
  constructor(
    private readonly ctx: EngineContext<TokenStore>,
    private readonly authenticate: Authenticate,
  ) {}

  /** Whether a login answers authorization requests: the operator's login app, or the development page. */
  get available(): boolean {
    return this.ctx.config.loginUrl !== '' || this.ctx.config.devLogin;
  }

  /**
   * Where the browser goes to log in for `challenge` (contract 5): the login app with
   * `?login_challenge=`, or the development page, whose path is `devLoginPath`. Null: no login.
   */
  loginTarget(challenge: string, devLoginPath: string): string | null {
    const { loginUrl, devLogin, issuer } = this.ctx.config;
    if (loginUrl === '' && !devLogin) return null;
    const url = new URL(loginUrl !== '' ? loginUrl : issuer.replace(/\/+$/, '') + devLoginPath);
    url.searchParams.set('login_challenge', challenge);
    return url.href;
  }

  /** RFC 6749 §4.1.1: the request checked, or why it stops and where that is told. */
  async check(pairs: QueryPairs): Promise<{ request: AuthorizeRequest } | { refusal: AuthorizeRefusal }> {
    const named = authorizeClientId(pairs);
    if ('refusal' in named) return named;
    return checkAuthorizeRequest(pairs, await this.ctx.store.getClient(named.clientId));
  }

  /** The URL a refusal to the redirect URI sends the browser to (RFC 6749 §4.1.2.1, with `iss`). */
  refusalUrl(refusal: Extract<AuthorizeRefusal, { to: 'redirect' }>): string {
    return flow.clientRedirect(this.ctx, refusal.redirectUri, { error: refusal.error, error_description: refusal.description, state: refusal.state });
  }

  /** Stores a checked request for the login app; `browser` is the cookie the browser sent, if any. */
  start(request: AuthorizeRequest, browser: string | null): Promise<flow.StartedAuthorization> {
    return flow.startAuthorization(this.ctx, request, browser);
  }

  /** `GET /oauth/login-requests/C`, for the authenticated login app. */
  async loginRequest(credentials: PresentedCredentials, source: string | undefined, challenge: string): Promise<flow.LoginRequestView> {
    return flow.loginRequest(this.ctx, await this.authenticate(credentials, source), challenge);
  }

  /** `POST /oauth/login-requests/C/accept`. */
  async accept(credentials: PresentedCredentials, source: string | undefined, challenge: string, body: unknown): Promise<flow.LoginAnswer> {
    return flow.acceptLogin(this.ctx, await this.authenticate(credentials, source), challenge, body);
  }

  /** `POST /oauth/login-requests/C/reject`. */
  async reject(credentials: PresentedCredentials, source: string | undefined, challenge: string, body: unknown): Promise<flow.LoginAnswer> {
    return flow.rejectLogin(this.ctx, await this.authenticate(credentials, source), challenge, body);
  }

  /** The development page's reading of a request: it runs in the server, as a login provider of its own. */
  builtInLoginRequest(challenge: string): Promise<flow.LoginRequestView> {
    this.checkDevLogin();
    return flow.loginRequest(this.ctx, BUILT_IN_PROVIDER, challenge);
  }

  /** The development page's answer, accept or reject. */
  builtInAnswer(challenge: string, accept: boolean, body: unknown): Promise<flow.LoginAnswer> {
    this.checkDevLogin();
    return accept ? flow.acceptLogin(this.ctx, BUILT_IN_PROVIDER, challenge, body) : flow.rejectLogin(this.ctx, BUILT_IN_PROVIDER, challenge, body);
  }

  private checkDevLogin(): void {
    if (!this.ctx.config.devLogin) throw new AccessDeniedError('The development login is off on this server');
  }

  /** The browser back from the login app: on to the client with a code or an error, or a page. */
  continue(verifier: string | undefined, browser: string | null): Promise<flow.ContinueOutcome> {
    return flow.continueAuthorization(this.ctx, verifier, browser);
  }
}
