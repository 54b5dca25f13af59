import { randomBytes } from 'node:crypto';
import type { AuthorizationRecord, AuthorizationStore, ClientRecord, ClientStore } from '../../store/store.js';
import type { EngineContext } from '../context.js';
import { AccessDeniedError, InvalidRequestError, LoginRequestAnsweredError, LoginRequestNotFoundError } from '../errors.js';
import { narrowScope } from '../issue.js';
import { InvalidScopeError } from '../errors.js';
import { newJti, sha256 } from '../tokens.js';
import type { AuthorizeRequest } from './authorize-request.js';

/** The store ports this module uses (store/ports/). */
type Ports = ClientStore & AuthorizationStore;

/** Contract 5: a login challenge lives 10 minutes. */
export const LOGIN_CHALLENGE_TTL_MS = 10 * 60_000;
/** Contract 5: a code lives 60 s (RFC 6749 §4.1.2: "a maximum authorization code lifetime of 10 minutes is RECOMMENDED"). */
export const CODE_TTL_MS = 60_000;
/** The code's prefix, as tokens have theirs (contract 2): a leaked code is recognisable. */
export const CODE_PREFIX = 'tcc_';
/** Where the login app sends the browser back to after its answer (its `redirect_to`). */
export const CONTINUE_PATH = '/oauth/authorize/continue';

const SECRET = /^[A-Za-z0-9_-]{43}$/;

/** 256 bits from the CSPRNG, base64url: a challenge, a verifier, a browser's cookie, a code. */
function secret(): string {
  return randomBytes(32).toString('base64url');
}

/** An authorization request taken up: the challenge for the login app, the cookie for the browser. */
export interface StartedAuthorization {
  challenge: string;
  /** The value of the browser's cookie: the one it sent, when well-formed, or a new one. */
  browser: string;
  expiresAt: number;
}

/** Stores a checked authorization request, pending, bound to the browser that sent it (contract 5). */
export async function startAuthorization(ctx: EngineContext<Ports>, request: AuthorizeRequest, browser: string | null): Promise<StartedAuthorization> {
  const now = ctx.clock.now();
  const challenge = secret();
  const cookie = browser !== null && SECRET.test(browser) ? browser : secret();
  const record: AuthorizationRecord = {
    id: newJti(now),
    challengeDigest: sha256(challenge),
    browserDigest: sha256(cookie),
    clientId: request.client.id,
    redirectUri: request.redirectUri,
    redirectUriSent: request.redirectUriSent,
    scope: request.scope,
    state: request.state,
    codeChallenge: request.codeChallenge,
    dpopJkt: request.dpopJkt,
    createdAt: now,
    expiresAt: now + LOGIN_CHALLENGE_TTL_MS,
    status: 'pending',
    decidedAt: null,
    verifierDigest: null,
    subject: null,
    username: null,
    grantedScope: null,
    error: null,
    errorDescription: null,
    codeDigest: null,
    codeExpiresAt: null,
    grantId: null,
    redeemedAt: null,
  };
  await ctx.store.createAuthorization(record);
  return { challenge, browser: cookie, expiresAt: record.expiresAt };
}

/** What the login app is told of a login request (contract 5). */
export interface LoginRequestView {
  client_id: string;
  client_name: string;
  scope: string;
  redirect_uri: string;
  /** Seconds since the epoch, as `exp` is (contract 2). */
  expires_at: number;
}

/** The login app's call: only a client registered with `--login-provider` may make it. */
function checkProvider(provider: ClientRecord): void {
  if (!provider.loginProvider) throw new AccessDeniedError(`Client "${provider.id}" is not a login provider (client create --login-provider, or client update --login-provider)`);
}

/** The pending request of `challenge`, or the error the login app is answered. */
async function pending(ctx: EngineContext<Ports>, challenge: string): Promise<AuthorizationRecord> {
  const found = SECRET.test(challenge) ? await ctx.store.findAuthorization({ challengeDigest: sha256(challenge) }) : null;
  if (found === null || ctx.clock.now() >= found.expiresAt) {
    throw new LoginRequestNotFoundError('There is no such login request, or it expired (they live 10 minutes): the user should start again from the application');
  }
  if (found.status !== 'pending') throw new LoginRequestAnsweredError('This login request was answered already');
  return found;
}

/** `GET /oauth/login-requests/C`: what is asked, for the login app to show. */
export async function loginRequest(ctx: EngineContext<Ports>, provider: ClientRecord, challenge: string): Promise<LoginRequestView> {
  checkProvider(provider);
  const a = await pending(ctx, challenge);
  const client = await ctx.store.getClient(a.clientId);
  return { client_id: a.clientId, client_name: client?.name ?? a.clientId, scope: a.scope, redirect_uri: a.redirectUri, expires_at: Math.floor(a.expiresAt / 1000) };
}

/** The login app's answer: `redirect_to` brings the browser back to tokenctl, which sends it on to the client. */
export interface LoginAnswer {
  redirect_to: string;
}

const NAME_MAX = 255;
/** RFC 6749 §4.1.2.1 / appendix A.7, A.8: the characters of `error` and `error_description`. */
const ERROR_CHARS = /^[\x20\x21\x23-\x5b\x5d-\x7e]+$/;

function text(body: Record<string, unknown>, name: string, required: boolean): string | undefined {
  const value = body[name];
  if (value === undefined || value === null) {
    if (required) throw new InvalidRequestError(`The field "${name}" is missing`, name);
    return undefined;
  }
  if (typeof value !== 'string') throw new InvalidRequestError(`The field "${name}" must be a string`, name);
  const trimmed = value.trim();
  if (trimmed === '' && required) throw new InvalidRequestError(`The field "${name}" must not be empty`, name);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(value)) throw new InvalidRequestError(`The field "${name}" must not contain control characters`, name);
  return trimmed === '' ? undefined : trimmed;
}

function objectBody(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new InvalidRequestError('The body must be a JSON object');
  return body as Record<string, unknown>;
}

function continueUrl(ctx: EngineContext<Ports>, verifier: string): string {
  return `${ctx.config.issuer.replace(/\/+$/, '')}${CONTINUE_PATH}?login_verifier=${verifier}`;
}

/** `POST /oauth/login-requests/C/accept` with `{subject, username?, scope?}` (contract 5). */
export async function acceptLogin(ctx: EngineContext<Ports>, provider: ClientRecord, challenge: string, body: unknown): Promise<LoginAnswer> {
  checkProvider(provider);
  const fields = objectBody(body);
  const subject = text(fields, 'subject', true)!;
  const username = text(fields, 'username', false) ?? subject;
  for (const [name, value] of [['subject', subject], ['username', username]] as const) {
    if (value.length > NAME_MAX) throw new InvalidRequestError(`The field "${name}" is longer than ${NAME_MAX} characters`, name);
  }
  const a = await pending(ctx, challenge);
  let grantedScope: string;
  try {
    // Never wider than asked (contract 5); empty asked means nothing was asked.
    grantedScope = narrowScope(text(fields, 'scope', false), a.scope, false);
  } catch (err) {
    if (err instanceof InvalidScopeError) throw new InvalidRequestError(`The field "scope": ${err.message}`, 'scope');
    throw err;
  }
  const verifier = secret();
  const decided = await ctx.store.decideAuthorization(a.id, { status: 'accepted', verifierDigest: sha256(verifier), subject, username, grantedScope }, ctx.clock.now());
  if (!decided) throw new LoginRequestAnsweredError('This login request was answered already');
  return { redirect_to: continueUrl(ctx, verifier) };
}

/** `POST /oauth/login-requests/C/reject` with `{error?, error_description?}`; the error defaults to `access_denied`. */
export async function rejectLogin(ctx: EngineContext<Ports>, provider: ClientRecord, challenge: string, body: unknown): Promise<LoginAnswer> {
  checkProvider(provider);
  const fields = objectBody(body);
  const error = text(fields, 'error', false) ?? 'access_denied';
  const description = text(fields, 'error_description', false) ?? null;
  if (!/^[a-z_]{1,64}$/.test(error)) throw new InvalidRequestError('The field "error" must be an OAuth error code such as access_denied', 'error');
  if (description !== null && (description.length > 500 || !ERROR_CHARS.test(description))) {
    throw new InvalidRequestError('The field "error_description" must be at most 500 printable ASCII characters without " or \\ (RFC 6749 §4.1.2.1)', 'error_description');
  }
  const a = await pending(ctx, challenge);
  const verifier = secret();
  const decided = await ctx.store.decideAuthorization(a.id, { status: 'rejected', verifierDigest: sha256(verifier), error, errorDescription: description }, ctx.clock.now());
  if (!decided) throw new LoginRequestAnsweredError('This login request was answered already');
  return { redirect_to: continueUrl(ctx, verifier) };
}

/** Where the browser goes at the end of the flow: to the client with a code or an error, or a page of tokenctl's. */
export type ContinueOutcome =
  | { to: 'client'; url: string }
  | { to: 'page'; status: number; title: string; description: string };

/** The RFC 6749 §4.1.2 / §4.1.2.1 response: parameters added to the redirect URI's query, with `iss` (RFC 9207). */
export function clientRedirect(ctx: EngineContext<unknown>, redirectUri: string, params: Record<string, string | null>): string {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(params)) if (value !== null) url.searchParams.append(name, value);
  url.searchParams.append('iss', ctx.config.issuer);
  return url.href;
}

/**
 * `GET /oauth/authorize/continue?login_verifier=V`: the browser back from the login app. Only the
 * browser that started the request may finish it (its cookie); an accepted request gets its
 * one code, a rejected one its error, both at the client's redirect URI.
 */
export async function continueAuthorization(ctx: EngineContext<Ports>, verifier: string | undefined, browser: string | null): Promise<ContinueOutcome> {
  const now = ctx.clock.now();
  const gone: ContinueOutcome = { to: 'page', status: 400, title: 'This login cannot be completed', description: 'The link is unknown, was used already, or expired. Go back to the application and sign in again.' };
  if (verifier === undefined || !SECRET.test(verifier)) return gone;
  const a = await ctx.store.findAuthorization({ verifierDigest: sha256(verifier) });
  if (a === null || now >= a.expiresAt) return gone;
  if (browser === null || sha256(browser) !== a.browserDigest) {
    return { to: 'page', status: 400, title: 'This login was started in another browser', description: 'For your protection, a login must be finished in the browser that started it. Go back to the application in this browser and sign in again.' };
  }
  if (a.status === 'rejected') return { to: 'client', url: clientRedirect(ctx, a.redirectUri, { error: a.error ?? 'access_denied', error_description: a.errorDescription, state: a.state }) };
  if (a.status !== 'accepted') return gone;
  const code = CODE_PREFIX + secret();
  const issued = await ctx.store.issueAuthorizationCode(a.id, { codeDigest: sha256(code), expiresAt: now + CODE_TTL_MS, grantId: newJti(now) }, now);
  if (!issued) return gone;
  return { to: 'client', url: clientRedirect(ctx, a.redirectUri, { code, state: a.state }) };
}
