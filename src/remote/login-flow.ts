import { createHash, randomBytes } from 'node:crypto';
import type { TokenResponse } from '../engine/results.js';
import { discover, type ServerMetadata } from './discovery.js';
import { remoteAuthorizationCode, sanitize, type DpopProver, type RemoteOptions } from './http-client.js';
import { LoginError } from './login-error.js';
import { listenForRedirect, LoopbackListenError, type Callback } from './loopback-redirect.js';
import type { OpenUrl } from './open-browser.js';

export { LoginError, type LoginErrorCode } from './login-error.js';

/**
 * `tokenctl login`: the authorization code flow of a native app (RFC 8252) against any server of
 * this kind. Discovery (RFC 8414), PKCE S256 (RFC 7636), a loopback redirect (RFC 8252 §7.3),
 * `state` (RFC 6749 §10.12) and `iss` (RFC 9207) checked, then the code exchanged (§4.1.3).
 */
export interface LoginOptions {
  /** The server's base URL (the issuer) and the client; the secret only for a confidential client. */
  remote: RemoteOptions;
  /** The scope to ask for; the server's default for the client when omitted. */
  scope?: string;
  /** The loopback port; 0 picks a free one. */
  port: number;
  /** How long to wait for the browser's return. */
  timeoutMs: number;
  /** Shows the authorization URL to the user (a browser); false when none could be opened. */
  openUrl: OpenUrl;
  /** What the user is told while the flow runs (stderr: stdout keeps the token response). */
  notice: (text: string) => void;
  /** Aborting it (Ctrl-C) stops the flow and closes the listener. */
  signal?: AbortSignal;
  /** Binds the code to a key (RFC 9449 §10, `dpop_jkt`) and proves it at the exchange (§5): the tokens are bound to it. */
  dpop?: DpopProver & { jkt?: string };
}

/** Runs the flow; returns the token endpoint's 2.1 response as the server sent it. */
export async function login(o: LoginOptions): Promise<TokenResponse> {
  const meta = await discover(o.remote);
  const verifier = randomBytes(32).toString('base64url');
  const state = randomBytes(16).toString('base64url');
  const loopback = await listenForRedirect(o.port).catch((err: unknown) => {
    if (err instanceof LoopbackListenError) throw new LoginError(err.message, 'port_unavailable', err.port === 0 ? undefined : 'choose another --port, or leave it out for a free one');
    throw err;
  });
  try {
    const url = authorizationUrl(meta, o.remote.clientId, loopback.redirectUri, state, verifier, o.scope, o.dpop?.jkt);
    o.notice(`Open this URL in a browser to log in to ${meta.issuer} as client ${o.remote.clientId}:\n\n  ${url}\n\n`);
    if (await o.openUrl(url)) o.notice('A browser was opened at it.\n');
    o.notice(`Waiting for the login (up to ${formatMs(o.timeoutMs)}; Ctrl-C to stop)…\n`);
    const cb = await awaitCallback(loopback.callback, o.timeoutMs, o.signal);
    try {
      const code = checkResponse(cb.params, state, meta);
      const tokens = await remoteAuthorizationCode(o.remote, meta.tokenEndpoint.href, { code, codeVerifier: verifier, redirectUri: loopback.redirectUri }, o.dpop);
      // RFC 6749 §5.1: a success carries at least these two.
      if (typeof tokens?.access_token !== 'string' || typeof tokens.token_type !== 'string') throw new LoginError('the token endpoint answered 200 without an access_token and token_type', 'bad_response');
      await cb.answer({ ok: true, title: 'You are logged in', text: 'tokenctl login has the tokens. You can close this tab.' });
      return tokens;
    } catch (err) {
      await answerFailure(cb, err);
      throw err;
    }
  } finally {
    await loopback.close();
  }
}

/** RFC 6749 §4.1.1 with RFC 7636 §4.3 (and RFC 9449 §10): the URL the browser opens. */
function authorizationUrl(meta: ServerMetadata, clientId: string, redirectUri: string, state: string, verifier: string, scope: string | undefined, dpopJkt: string | undefined): string {
  const url = new URL(meta.authorizationEndpoint.href);
  const params: Record<string, string> = { response_type: 'code', client_id: clientId, redirect_uri: redirectUri, state, code_challenge: s256(verifier), code_challenge_method: 'S256' };
  if (scope !== undefined && scope !== '') params.scope = scope;
  // RFC 9449 §10: only a token request proving this key can exchange the code.
  if (dpopJkt !== undefined) params.dpop_jkt = dpopJkt;
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  return url.href;
}

/** RFC 7636 §4.2: BASE64URL(SHA256(ASCII(code_verifier))). */
export function s256(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url');
}

/**
 * The browser's return, checked in the order that matters: `state` first (a response to another
 * request, RFC 6749 §10.12), then `iss` (from another server, RFC 9207 §2.4), then its outcome.
 * Returns the code; never puts it in a message.
 */
export function checkResponse(params: URLSearchParams, state: string, meta: ServerMetadata): string {
  if (params.get('state') !== state) {
    throw new LoginError('the browser returned a response that does not carry this login’s state: refused (RFC 6749 §10.12)', 'state_mismatch', 'start the login again, and finish it in the browser it opens');
  }
  const iss = params.get('iss');
  if (iss === null ? meta.issParameterSupported : iss !== meta.issuer) {
    const said = iss === null ? 'no iss' : `iss ${JSON.stringify(sanitize(iss))}`;
    throw new LoginError(`the authorization response carries ${said}, not the issuer ${meta.issuer}: refused (RFC 9207 §2.4)`, 'iss_mismatch');
  }
  const error = params.get('error');
  if (error !== null) {
    const description = params.get('error_description') ?? undefined;
    const uri = params.get('error_uri') ?? undefined;
    const text = sanitize([error, description].filter(Boolean).join(': ')) as string;
    const hint = error === 'access_denied' ? 'the login was cancelled or refused: run tokenctl login again to retry' : uri === undefined ? undefined : `see ${sanitize(uri) as string}`;
    throw new LoginError(`the server refused the login: ${text}`, 'authorization_error', hint, {
      error,
      ...(description !== undefined && { error_description: description }),
      ...(uri !== undefined && { error_uri: uri }),
    });
  }
  const code = params.get('code');
  if (code === null || code === '') throw new LoginError('the authorization response has neither a code nor an error', 'bad_response');
  return code;
}

/** The first callback, or a timeout, or Ctrl-C. */
function awaitCallback(callback: Promise<Callback>, timeoutMs: number, signal: AbortSignal | undefined): Promise<Callback> {
  return new Promise((resolve, reject) => {
    const stop = (err: LoginError) => {
      cleanup();
      reject(err);
    };
    const onAbort = () => stop(new LoginError('login cancelled: nothing was issued', 'interrupted'));
    const timer = setTimeout(
      () =>
        stop(
          new LoginError(
            `no login within ${formatMs(timeoutMs)}: nothing was issued`,
            'timeout',
            'if the browser showed an error page (an unknown client ID, or http://127.0.0.1/callback not among the client’s redirect URIs), fix that; --timeout gives more time',
          ),
        ),
      timeoutMs,
    );
    const cleanup = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    callback.then((cb) => {
      cleanup();
      resolve(cb);
    }, stop);
  });
}

async function answerFailure(cb: Callback, err: unknown): Promise<void> {
  const why = err instanceof Error ? err.message : String(err);
  await cb.answer({ ok: false, title: 'The login did not complete', text: `${why}. Go back to the terminal for details.` }).catch(() => undefined);
}

function formatMs(ms: number): string {
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}
