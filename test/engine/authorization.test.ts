import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { AuthorizeRequest, QueryPairs } from '../../src/engine/authorization/index.js';
import { s256 } from '../../src/engine/authorization/pkce.js';
import { sha256 } from '../../src/engine/tokens.js';
import type { Engine } from '../../src/engine/engine.js';
import { CodeReplayedError, InvalidDpopProofError, InvalidGrantError, LoginRequestAnsweredError, LoginRequestNotFoundError, UnauthorizedClientError, AccessDeniedError, InvalidRequestError } from '../../src/engine/errors.js';
import type { ManualClock } from '../../src/engine/clock.js';
import { dpopKey, makeProof, type DpopKey } from '../helpers/dpop.js';
import { addClient, credentialsOf, introspected, makeEngine, MINUTE, SECOND } from '../helpers/engine.js';

/**
 * The authorization code flow in the engine (contract 5): the authorize request, the login app's
 * back channel, the browser's return, and the code's exchange at the token endpoint.
 */

const REDIRECT = 'https://app.example.test/callback';
const verifier = (): string => randomBytes(32).toString('base64url');

function query(params: Record<string, string>): QueryPairs {
  return Object.entries(params);
}

async function setup() {
  const s = makeEngine();
  const app = await addClient(s.store, { id: 'app', redirectUris: [REDIRECT, 'http://127.0.0.1/cb'], grantTypes: ['authorization_code', 'refresh_token'] });
  const login = await s.engine.createClient({ name: 'Login', id: 'login-app', loginProvider: true }, 'test');
  const provider = credentialsOf({ id: 'login-app' }, login.client_secret!);
  return { ...s, app, provider };
}

type Setup = Awaited<ReturnType<typeof setup>>;

async function checked(engine: Engine, params: Record<string, string>): Promise<AuthorizeRequest> {
  const r = await engine.authorization.check(query(params));
  if (!('request' in r)) throw new Error(`refused: ${JSON.stringify(r.refusal)}`);
  return r.request;
}

/** The browser's part up to the code: authorize, the login app accepts, the browser returns. */
async function codeFor(s: Setup, opts: { v?: string; state?: string; scope?: string; subject?: string; dpopJkt?: string } = {}) {
  const v = opts.v ?? verifier();
  const request = await checked(s.engine, { response_type: 'code', client_id: 'app', redirect_uri: REDIRECT, code_challenge: s256(v), code_challenge_method: 'S256', state: opts.state ?? 'st-1', ...(opts.scope ? { scope: opts.scope } : {}), ...(opts.dpopJkt ? { dpop_jkt: opts.dpopJkt } : {}) });
  const started = await s.engine.authorization.start(request, null);
  const answer = await s.engine.authorization.accept(s.provider, undefined, started.challenge, { subject: opts.subject ?? 'user-42', username: 'alice' });
  const back = new URL(answer.redirect_to);
  const out = await s.engine.authorization.continue(back.searchParams.get('login_verifier') ?? undefined, started.browser);
  if (out.to !== 'client') throw new Error(`not sent to the client: ${JSON.stringify(out)}`);
  const url = new URL(out.url);
  return { url, code: url.searchParams.get('code')!, v, started, answer };
}

function exchange(engine: Engine, code: string, v: string, redirectUri: string | null = REDIRECT, clientId = 'app', dpop?: string) {
  const grant = engine.tokenRequest({ grant_type: 'authorization_code', code, code_verifier: v, ...(redirectUri ? { redirect_uri: redirectUri } : {}) });
  return engine.tokenAsClient({ grant, credentials: credentialsOf({ id: clientId }), ...(dpop !== undefined && { dpop: { header: dpop, method: 'POST', url: 'https://auth.example.test/oauth/token' } }) });
}

describe('the authorize request', () => {
  it('is told on a page, never redirected, while the client or its redirect URI is not established', async () => {
    const s = await setup();
    const page = async (params: Record<string, string> | QueryPairs) => {
      const r = await s.engine.authorization.check(Array.isArray(params) ? params : query(params as Record<string, string>));
      expect('refusal' in r && r.refusal.to).toBe('page');
      return 'refusal' in r ? r.refusal : null;
    };
    expect((await page({ response_type: 'code' }))?.description).toMatch(/client_id is missing/);
    expect((await page({ client_id: 'nobody' }))?.error).toBe('invalid_client');
    expect((await page([['client_id', 'app'], ['client_id', 'app']]))?.description).toMatch(/more than once/);
    expect((await page({ client_id: 'app', redirect_uri: 'https://evil.example/cb' }))?.description).toMatch(/not registered/);
    expect((await page({ client_id: 'app', redirect_uri: REDIRECT + '/x' }))?.description).toMatch(/not registered/);
    // Two registered: which one is not guessed.
    expect((await page({ client_id: 'app' }))?.description).toMatch(/redirect_uri is missing/);
    expect((await page([['client_id', 'app'], ['redirect_uri', REDIRECT], ['redirect_uri', REDIRECT]]))?.description).toMatch(/more than once/);
  });

  it('is told to the redirect URI with state once the client and URI are established', async () => {
    const s = await setup();
    const base = { client_id: 'app', redirect_uri: REDIRECT, state: 'xyz', response_type: 'code', code_challenge: s256(verifier()), code_challenge_method: 'S256' };
    const back = async (params: Record<string, string | undefined>, error: string, description?: RegExp) => {
      const pairs = Object.entries(params).filter((e): e is [string, string] => e[1] !== undefined);
      const r = await s.engine.authorization.check(pairs);
      if (!('refusal' in r) || r.refusal.to !== 'redirect') throw new Error(`expected a redirect refusal, got ${JSON.stringify(r)}`);
      expect(r.refusal).toMatchObject({ redirectUri: REDIRECT, error });
      if (description) expect(r.refusal.description).toMatch(description);
      const url = new URL(s.engine.authorization.refusalUrl(r.refusal));
      expect(url.searchParams.get('error')).toBe(error);
      expect(url.searchParams.get('iss')).toBe('https://auth.example.test');
      return url;
    };
    expect((await back({ ...base, response_type: undefined }, 'invalid_request', /response_type/)).searchParams.get('state')).toBe('xyz');
    await back({ ...base, response_type: 'token' }, 'unsupported_response_type');
    await back({ ...base, code_challenge: undefined }, 'invalid_request', /PKCE is required/);
    await back({ ...base, code_challenge_method: undefined }, 'invalid_request', /S256/);
    await back({ ...base, code_challenge_method: 'plain' }, 'invalid_request', /plain is not accepted/);
    await back({ ...base, code_challenge: 'short' }, 'invalid_request', /43-character/);
    await back({ ...base, scope: 'read superuser' }, 'invalid_scope', /superuser/);
    const repeated = await s.engine.authorization.check([...query(base), ['scope', 'read'], ['scope', 'write']]);
    expect('refusal' in repeated && repeated.refusal).toMatchObject({ to: 'redirect', error: 'invalid_request', description: 'The parameter scope is given more than once' });
  });

  it('a client without the code grant is unauthorized_client, at its redirect URI', async () => {
    const s = await setup();
    await addClient(s.store, { id: 'old', redirectUris: [REDIRECT], grantTypes: ['refresh_token'] });
    const r = await s.engine.authorization.check(query({ client_id: 'old', response_type: 'code', code_challenge: s256(verifier()), code_challenge_method: 'S256' }));
    expect('refusal' in r && r.refusal).toMatchObject({ to: 'redirect', error: 'unauthorized_client' });
  });

  it('matches a loopback redirect URI with any port (RFC 8252 §7.3), and nothing else loosely', async () => {
    const s = await setup();
    const ok = await checked(s.engine, { client_id: 'app', redirect_uri: 'http://127.0.0.1:51234/cb', response_type: 'code', code_challenge: s256(verifier()), code_challenge_method: 'S256' });
    expect(ok.redirectUri).toBe('http://127.0.0.1:51234/cb');
    for (const uri of ['http://127.0.0.1:51234/cb/', 'http://127.0.0.1:51234/other', 'http://localhost:51234/cb', 'https://127.0.0.1:51234/cb']) {
      const r = await s.engine.authorization.check(query({ client_id: 'app', redirect_uri: uri, response_type: 'code' }));
      expect('refusal' in r && r.refusal.to, uri).toBe('page');
    }
  });

  it('the scope defaults to the client’s and may be narrowed', async () => {
    const s = await setup();
    const pkce = { client_id: 'app', redirect_uri: REDIRECT, response_type: 'code', code_challenge: s256(verifier()), code_challenge_method: 'S256' };
    expect((await checked(s.engine, pkce)).scope).toBe('read write admin');
    expect((await checked(s.engine, { ...pkce, scope: 'read' })).scope).toBe('read');
  });
});

describe('the login back channel', () => {
  it('shows the request to a login provider only', async () => {
    const s = await setup();
    const request = await checked(s.engine, { client_id: 'app', redirect_uri: REDIRECT, response_type: 'code', code_challenge: s256(verifier()), code_challenge_method: 'S256', scope: 'read' });
    const { challenge, expiresAt } = await s.engine.authorization.start(request, null);
    expect(await s.engine.authorization.loginRequest(s.provider, undefined, challenge)).toEqual({ client_id: 'app', client_name: 'App', scope: 'read', redirect_uri: REDIRECT, expires_at: Math.floor(expiresAt / 1000) });
    const other = await s.engine.createClient({ name: 'Other' }, 'test');
    await expect(s.engine.authorization.loginRequest(credentialsOf({ id: other.client.client_id }, other.client_secret!), undefined, challenge)).rejects.toThrow(AccessDeniedError);
    await expect(s.engine.authorization.loginRequest(s.provider, undefined, 'forged')).rejects.toThrow(LoginRequestNotFoundError);
  });

  it('a challenge is answered once, and not after 10 minutes', async () => {
    const s = await setup();
    const request = await checked(s.engine, { client_id: 'app', redirect_uri: REDIRECT, response_type: 'code', code_challenge: s256(verifier()), code_challenge_method: 'S256' });
    const a = await s.engine.authorization.start(request, null);
    await s.engine.authorization.accept(s.provider, undefined, a.challenge, { subject: 'u' });
    await expect(s.engine.authorization.accept(s.provider, undefined, a.challenge, { subject: 'u' })).rejects.toThrow(LoginRequestAnsweredError);
    await expect(s.engine.authorization.reject(s.provider, undefined, a.challenge, {})).rejects.toThrow(LoginRequestAnsweredError);
    const b = await s.engine.authorization.start(request, null);
    (s.clock as ManualClock).advance(10 * MINUTE);
    await expect(s.engine.authorization.accept(s.provider, undefined, b.challenge, { subject: 'u' })).rejects.toThrow(LoginRequestNotFoundError);
  });

  it('refuses a malformed answer with what is wrong, and changes nothing', async () => {
    const s = await setup();
    const request = await checked(s.engine, { client_id: 'app', redirect_uri: REDIRECT, response_type: 'code', code_challenge: s256(verifier()), code_challenge_method: 'S256', scope: 'read' });
    const a = await s.engine.authorization.start(request, null);
    for (const [body, why] of [[null, /JSON object/], [[], /JSON object/], [{}, /subject" is missing/], [{ subject: 5 }, /must be a string/], [{ subject: ' ' }, /must not be empty/], [{ subject: 'a\u0007' }, /control/], [{ subject: 'u', scope: 'write' }, /exceeds/]] as const) {
      await expect(s.engine.authorization.accept(s.provider, undefined, a.challenge, body), JSON.stringify(body)).rejects.toThrow(why);
    }
    await expect(s.engine.authorization.reject(s.provider, undefined, a.challenge, { error: 'Not An Error' })).rejects.toThrow(InvalidRequestError);
    // Still pending: the login app may answer properly.
    expect((await s.engine.authorization.loginRequest(s.provider, undefined, a.challenge)).scope).toBe('read');
  });

  it('a rejection reaches the client as its error, with state and iss', async () => {
    const s = await setup();
    const request = await checked(s.engine, { client_id: 'app', redirect_uri: REDIRECT, response_type: 'code', code_challenge: s256(verifier()), code_challenge_method: 'S256', state: 's t&8' });
    const a = await s.engine.authorization.start(request, null);
    const { redirect_to } = await s.engine.authorization.reject(s.provider, undefined, a.challenge, { error_description: 'The user said no' });
    const out = await s.engine.authorization.continue(new URL(redirect_to).searchParams.get('login_verifier')!, a.browser);
    expect(out.to).toBe('client');
    const url = new URL(out.to === 'client' ? out.url : '');
    expect(Object.fromEntries(url.searchParams)).toEqual({ error: 'access_denied', error_description: 'The user said no', state: 's t&8', iss: 'https://auth.example.test' });
  });

  it('only the browser that started the request finishes it', async () => {
    const s = await setup();
    const request = await checked(s.engine, { client_id: 'app', redirect_uri: REDIRECT, response_type: 'code', code_challenge: s256(verifier()), code_challenge_method: 'S256' });
    const a = await s.engine.authorization.start(request, null);
    const { redirect_to } = await s.engine.authorization.accept(s.provider, undefined, a.challenge, { subject: 'u' });
    const v = new URL(redirect_to).searchParams.get('login_verifier')!;
    expect(await s.engine.authorization.continue(v, null)).toMatchObject({ to: 'page', title: /another browser/ });
    expect(await s.engine.authorization.continue(v, randomBytes(32).toString('base64url'))).toMatchObject({ to: 'page', title: /another browser/ });
    expect((await s.engine.authorization.continue(v, a.browser)).to).toBe('client');
    // Once: the back button does not make a second code.
    expect(await s.engine.authorization.continue(v, a.browser)).toMatchObject({ to: 'page', title: /cannot be completed/ });
  });
});

describe('grant_type=authorization_code', () => {
  it('exchanges the code for a new grant: all nine fields, the login’s user and scope, refreshable', async () => {
    const s = await setup();
    const { code, v, url } = await codeFor(s, { scope: 'read write' });
    expect(url.origin + url.pathname).toBe(REDIRECT);
    expect(url.searchParams.get('state')).toBe('st-1');
    expect(url.searchParams.get('iss')).toBe('https://auth.example.test');
    expect(code).toMatch(/^tcc_[A-Za-z0-9_-]{43}$/);
    const out = await exchange(s.engine, code, v);
    expect(Object.keys(out.result).sort()).toEqual(['access_token', 'expires_in', 'jti', 'node', 'org_id', 'refresh_token', 'scope', 'stime', 'token_type']);
    expect(out.done).toEqual({ kind: 'code_exchanged' });
    expect(await introspected(s.engine, out.result.access_token)).toMatchObject({ active: true, username: 'alice', sub: 'user-42', scope: 'read write', client_id: 'app' });
    const refreshed = await s.engine.refreshAsClient({ credentials: credentialsOf({ id: 'app' }), token: (out.result as { refresh_token: string }).refresh_token });
    expect(refreshed.result.scope).toBe('read write');
    const audit = await s.engine.audit({ limit: 10 });
    expect(audit.find((e) => e.action === 'grant.authorize')).toMatchObject({ actor: 'app', detail: expect.stringContaining('alice') });
  });

  it('a code presented again is invalid_grant and revokes what it issued', async () => {
    const s = await setup();
    const { code, v } = await codeFor(s);
    const first = await exchange(s.engine, code, v);
    const again = await exchange(s.engine, code, v).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(CodeReplayedError);
    expect((again as CodeReplayedError).code).toBe('invalid_grant');
    expect((again as CodeReplayedError).grantTokens).toBe(2);
    expect(await introspected(s.engine, first.result.access_token)).toEqual({ active: false });
    expect(await introspected(s.engine, (first.result as { refresh_token: string }).refresh_token)).toEqual({ active: false });
    expect((await s.engine.audit({ limit: 10 })).map((e) => e.action)).toContain('grant.code_replayed');
  });

  it('the replay’s revocation is told to receivers: one grant-wide event', async () => {
    const s = await setup();
    await s.store.createReceiver({ id: 'gw', delivery: 'push', endpointUrl: 'https://gw.example.test/events', authorization: null, caPem: null, clientId: null, audience: 'gw', createdAt: 0, retentionMs: 86_400_000 }, {});
    const { code, v } = await codeFor(s);
    const first = await exchange(s.engine, code, v);
    await expect(exchange(s.engine, code, v)).rejects.toThrow(CodeReplayedError);
    const grantId = (await s.store.findTokenByJti(first.result.jti))!.grantId;
    const [delivery] = await s.store.pendingDeliveries('gw', 10);
    expect(delivery!.events).toEqual([expect.objectContaining({ reason: 'reuse_detected', scope: 'grant', grantId, clientId: 'app', username: 'alice' })]);
  });

  it('a code presented again after its grant ended is still audited, with nothing revoked', async () => {
    const s = await setup();
    const { code, v } = await codeFor(s);
    await exchange(s.engine, code, v);
    await exchange(s.engine, code, v).catch(() => undefined);
    const late = await exchange(s.engine, code, v).catch((e: unknown) => e);
    expect((late as CodeReplayedError).grantTokens).toBe(0);
    const replays = (await s.engine.audit({ limit: 10 })).filter((e) => e.action === 'grant.code_replayed');
    expect(replays.map((e) => [e.count, e.detail])).toEqual([
      [0, 'authorization code presented again; its grant had ended already'],
      [2, 'authorization code presented again; grant revoked'],
    ]);
  });

  it('refuses a wrong verifier, redirect URI, client or an expired code, and issues nothing', async () => {
    const s = await setup();
    await addClient(s.store, { id: 'other', redirectUris: [REDIRECT], grantTypes: ['authorization_code'] });
    const { code, v } = await codeFor(s);
    await expect(exchange(s.engine, code, verifier())).rejects.toThrow(/code_verifier does not match/);
    await expect(exchange(s.engine, code, v, 'http://127.0.0.1/cb')).rejects.toThrow(/redirect_uri does not match/);
    await expect(exchange(s.engine, code, v, null)).rejects.toThrow(/redirect_uri does not match/);
    await expect(exchange(s.engine, code, v, REDIRECT, 'other')).rejects.toThrow(/not recognised/);
    await expect(exchange(s.engine, 'tcc_' + 'x'.repeat(43), v)).rejects.toThrow(InvalidGrantError);
    expect(await s.store.countTokens({})).toBe(0);
    // The right request still works: the failures consumed nothing.
    expect((await exchange(s.engine, code, v)).result.access_token).toMatch(/^tca_/);
    const late = await codeFor(s);
    (s.clock as ManualClock).advance(60 * SECOND);
    await expect(exchange(s.engine, late.code, late.v)).rejects.toThrow(/not recognised, or has expired/);
  });

  it('a client without the grant is unauthorized_client', async () => {
    const s = await setup();
    const { code, v } = await codeFor(s);
    await s.engine.updateClient('app', { grantTypes: ['refresh_token'] }, 'test');
    await expect(exchange(s.engine, code, v)).rejects.toThrow(UnauthorizedClientError);
  });
});

describe('dpop_jkt: the code bound to a DPoP key (RFC 9449 §10)', () => {
  const proofBy = (s: Setup, key: DpopKey) => makeProof(key, { iatMs: s.clock.now() });

  it('is redeemed only with a proof by that key; without one or with another, invalid_dpop_proof and nothing issued', async () => {
    const s = await setup();
    const key = await dpopKey();
    const other = await dpopKey();
    const { code, v } = await codeFor(s, { dpopJkt: key.jkt });
    const refused = async (dpop: string | undefined, reason: string, message: RegExp) => {
      const err = await exchange(s.engine, code, v, REDIRECT, 'app', dpop).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidDpopProofError);
      expect((err as InvalidDpopProofError).reason).toBe(reason);
      expect((err as InvalidDpopProofError).message).toMatch(message);
    };
    await refused(undefined, 'required', /^The authorization code is bound to a DPoP key \(dpop_jkt\): .*\(RFC 9449 §10\)$/);
    await refused(await proofBy(s, other), 'key_mismatch', /the key the authorization request named in dpop_jkt \(RFC 9449 §10\)$/);
    expect(await s.store.countTokens({})).toBe(0);
    // The refusals consumed nothing: the code still works, with the right key, and its tokens are bound.
    const out = await exchange(s.engine, code, v, REDIRECT, 'app', await proofBy(s, key));
    expect(out.result.token_type).toBe('DPoP');
    expect(await introspected(s.engine, out.result.access_token)).toMatchObject({ active: true, cnf: { jkt: key.jkt } });
  });

  it('a code without dpop_jkt takes any proof, or none', async () => {
    const s = await setup();
    const plain = await codeFor(s);
    expect((await exchange(s.engine, plain.code, plain.v, REDIRECT, 'app', await proofBy(s, await dpopKey()))).result.token_type).toBe('DPoP');
    const bearer = await codeFor(s);
    expect((await exchange(s.engine, bearer.code, bearer.v)).result.token_type.toLowerCase()).toBe('bearer');
  });

  it('a malformed dpop_jkt is invalid_request at the redirect URI, saying what it must be', async () => {
    const s = await setup();
    for (const bad of ['short', 'x'.repeat(44), 'a'.repeat(42) + '+', 'a'.repeat(42) + 'B']) {
      const r = await s.engine.authorization.check(query({ response_type: 'code', client_id: 'app', redirect_uri: REDIRECT, state: 's', code_challenge: s256(verifier()), code_challenge_method: 'S256', dpop_jkt: bad }));
      expect(r).toMatchObject({ refusal: { to: 'redirect', error: 'invalid_request', state: 's' } });
      expect('refusal' in r && r.refusal.description).toMatch(/dpop_jkt must be the 43-character base64url SHA-256 JWK thumbprint/);
    }
    const twice = await s.engine.authorization.check([...query({ response_type: 'code', client_id: 'app', redirect_uri: REDIRECT, code_challenge: s256(verifier()), code_challenge_method: 'S256' }), ['dpop_jkt', 'a'.repeat(43)], ['dpop_jkt', 'a'.repeat(43)]]);
    expect('refusal' in twice && twice.refusal.description).toMatch(/dpop_jkt is given more than once/);
  });
});

describe('purge', () => {
  it('deletes the authorization requests that ended, and only those', async () => {
    const s = await setup();
    const { code } = await codeFor(s);
    const pendingOne = await s.engine.authorization.start(await checked(s.engine, { client_id: 'app', redirect_uri: REDIRECT, response_type: 'code', code_challenge: s256(verifier()), code_challenge_method: 'S256' }), null);
    await s.engine.purge({ olderThanMs: 0 }, 'test');
    // Both still live: the code for 60 s, the challenge for 10 minutes.
    expect(await s.store.findAuthorization({ codeDigest: sha256(code) })).not.toBeNull();
    expect(await s.store.findAuthorization({ challengeDigest: sha256(pendingOne.challenge) })).not.toBeNull();
    (s.clock as ManualClock).advance(10 * MINUTE + SECOND);
    await s.engine.purge({ olderThanMs: 30 * 86_400_000 }, 'test');
    expect(await s.store.findAuthorization({ codeDigest: sha256(code) })).toBeNull();
    expect(await s.store.findAuthorization({ challengeDigest: sha256(pendingOne.challenge) })).toBeNull();
  });
});

describe('grant_type=client_credentials', () => {
  it('gives a confidential client that has the grant an access token of its own, no refresh token', async () => {
    const s = makeEngine();
    const made = await s.engine.createClient({ name: 'Cron', id: 'cron', scope: 'jobs reports', grantTypes: ['client_credentials'] }, 'test');
    const grant = s.engine.tokenRequest({ grant_type: 'client_credentials', scope: 'jobs' });
    const out = await s.engine.tokenAsClient({ grant, credentials: credentialsOf({ id: 'cron' }, made.client_secret!) });
    expect(Object.keys(out.result).sort()).toEqual(['access_token', 'expires_in', 'jti', 'node', 'org_id', 'scope', 'stime', 'token_type']);
    expect(await introspected(s.engine, out.result.access_token)).toMatchObject({ active: true, sub: 'cron', username: 'cron', scope: 'jobs', client_id: 'cron' });
    await expect(s.engine.tokenAsClient({ grant: s.engine.tokenRequest({ grant_type: 'client_credentials', scope: 'admin' }), credentials: credentialsOf({ id: 'cron' }, made.client_secret!) })).rejects.toThrow(/exceeds/);
    // Without the grant: unauthorized_client.
    const other = await s.engine.createClient({ name: 'Web' }, 'test');
    await expect(s.engine.tokenAsClient({ grant: s.engine.tokenRequest({ grant_type: 'client_credentials' }), credentials: credentialsOf({ id: other.client.client_id }, other.client_secret!) })).rejects.toThrow(UnauthorizedClientError);
  });

  it('a client registered without a scope gets tokens without one, and cannot ask for any', async () => {
    const s = makeEngine();
    const made = await s.engine.createClient({ name: 'Cron', id: 'cron2', grantTypes: ['client_credentials'] }, 'test');
    const as = (scope?: string) => s.engine.tokenAsClient({ grant: s.engine.tokenRequest({ grant_type: 'client_credentials', ...(scope ? { scope } : {}) }), credentials: credentialsOf({ id: 'cron2' }, made.client_secret!) });
    expect((await as()).result.scope).toBe('');
    await expect(as('admin')).rejects.toThrow(/exceeds the granted scope: admin \(granted: none\)/);
  });

  it('is refused to public clients at registration', async () => {
    const s = makeEngine();
    await expect(s.engine.createClient({ name: 'SPA', public: true, grantTypes: ['client_credentials'] }, 'test')).rejects.toThrow(/public client cannot use client_credentials/);
  });
});

describe('client settings', () => {
  it('a new client with a redirect URI gets the code flow and refresh; without, refresh only', async () => {
    const s = makeEngine();
    expect((await s.engine.createClient({ name: 'Web', redirectUris: [REDIRECT] }, 't')).client.grant_types).toEqual(['authorization_code', 'refresh_token']);
    expect((await s.engine.createClient({ name: 'Api' }, 't')).client.grant_types).toEqual(['refresh_token']);
  });

  it('refuses redirect URIs that are not safe to send a code to', async () => {
    const s = makeEngine();
    for (const [uri, why] of [
      ['http://app.example.com/cb', /loopback/],
      ['https://app.example.com/cb#frag', /fragment/],
      ['/relative', /absolute/],
      ['javascript:alert(1)', /private-use/],
      ['myapp:/cb', /reverse domain/],
    ] as const) {
      await expect(s.engine.createClient({ name: 'W', redirectUris: [uri] }, 't'), uri).rejects.toThrow(why);
    }
    for (const uri of ['https://app.example.com/cb?x=1', 'http://127.0.0.1/cb', 'http://[::1]:8080/cb', 'http://localhost:3000/callback', 'com.example.app:/oauth']) {
      await expect(s.engine.createClient({ name: 'W', redirectUris: [uri] }, 't'), uri).resolves.toBeDefined();
    }
    await expect(s.engine.createClient({ name: 'W', grantTypes: ['authorization_code'] }, 't')).rejects.toThrow(/needs at least one redirect URI/);
    await expect(s.engine.createClient({ name: 'W', grantTypes: ['password'] }, 't')).rejects.toThrow(/not a grant type/);
    await expect(s.engine.createClient({ name: 'W', public: true, loginProvider: true }, 't')).rejects.toThrow(/login provider/);
  });

  it('update adds, removes and replaces, audited; a bad change changes nothing', async () => {
    const s = makeEngine();
    const { client } = await s.engine.createClient({ name: 'Web', id: 'web', redirectUris: [REDIRECT] }, 't');
    expect(client.redirect_uris).toEqual([REDIRECT]);
    const added = await s.engine.updateClient('web', { addRedirectUris: ['http://127.0.0.1/cb'] }, 'op');
    expect(added.redirect_uris).toEqual([REDIRECT, 'http://127.0.0.1/cb']);
    await expect(s.engine.updateClient('web', { removeRedirectUris: [REDIRECT, 'http://127.0.0.1/cb'] }, 'op')).rejects.toThrow(/needs at least one redirect URI/);
    await expect(s.engine.updateClient('web', { removeRedirectUris: ['https://nope.example/cb'] }, 'op')).rejects.toThrow(/has no redirect URI/);
    expect((await s.engine.getClient('web')).redirect_uris).toEqual([REDIRECT, 'http://127.0.0.1/cb']);
    expect((await s.engine.updateClient('web', { grantTypes: ['refresh_token'], redirectUris: [] }, 'op')).grant_types).toEqual(['refresh_token']);
    expect((await s.engine.audit({ limit: 5 })).filter((e) => e.action === 'client.update')).toHaveLength(2);
  });
});
