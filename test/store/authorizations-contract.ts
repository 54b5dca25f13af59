import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { AuditEntry, AuthorizationRecord, IssuedCode, LoginDecision, TokenStore } from '../../src/store/store.js';
import { MINUTE, T0, makeClient, makeGrant } from '../helpers/records.js';

/**
 * The authorization code flow's part of the store contract (ports/authorizations.ts) and the
 * client settings it needs, called by describeStoreContract (contract.ts) inside its own
 * describe: `store()` is that test's store, holding `client-1` and `client-2`.
 */
export function describeAuthorizationContract(store: () => TokenStore): void {
  /** A pending request of client-1, alive ten minutes from T0; its digests derive from its id. */
  const request = (o: Partial<AuthorizationRecord> = {}): AuthorizationRecord => {
    const id = o.id ?? randomUUID();
    return {
      id,
      challengeDigest: `challenge-${id}`,
      browserDigest: `browser-${id}`,
      clientId: 'client-1',
      redirectUri: 'https://app.example.test/callback',
      redirectUriSent: true,
      scope: 'read write',
      state: 'af0ifjsldkj',
      codeChallenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      dpopJkt: null,
      createdAt: T0,
      expiresAt: T0 + 10 * MINUTE,
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
      ...o,
    };
  };
  const accept = (a: AuthorizationRecord): LoginDecision => ({
    status: 'accepted', verifierDigest: `verifier-${a.id}`, subject: 'alice-sub', username: 'alice', grantedScope: 'read',
  });
  const reject = (a: AuthorizationRecord): LoginDecision => ({ status: 'rejected', verifierDigest: `verifier-${a.id}`, error: 'access_denied', errorDescription: null });
  /** A code living a minute from T0 + 1 min. */
  const code = (a: AuthorizationRecord, n = 0): IssuedCode => ({ codeDigest: `code-${n}-${a.id}`, expiresAt: T0 + 2 * MINUTE, grantId: `grant-${n}-${a.id}` });
  const find = (a: AuthorizationRecord) => store().findAuthorization({ challengeDigest: a.challengeDigest });
  /** A request created, accepted and given a code at T0 + 1 min. */
  const withCode = async (o: Partial<AuthorizationRecord> = {}) => {
    const a = request(o);
    await store().createAuthorization(a);
    expect(await store().decideAuthorization(a.id, accept(a), T0 + MINUTE)).toBe(true);
    const c = code(a);
    expect(await store().issueAuthorizationCode(a.id, c, T0 + MINUTE)).toBe(true);
    return { a, c };
  };
  const line = (target: string): AuditEntry => ({ at: T0 + MINUTE, actor: 'client-1', action: 'token.issue', target, count: 2, detail: 'authorization_code' });
  /** The grant a redemption forms: a refresh and an access token of client-1. */
  const grantOf = (c: IssuedCode) => {
    const { refresh, access } = makeGrant({ clientId: 'client-1', grantId: c.grantId, issuedAt: T0 + MINUTE, notBefore: T0 + MINUTE });
    return [refresh, access];
  };

  describe('client settings', () => {
    const settings = { redirectUris: ['https://app.example.test/callback', 'http://127.0.0.1/cb'], grantTypes: ['authorization_code', 'refresh_token'], loginProvider: true, requireDpop: false };

    it('stores redirect URIs, grant types and the login-provider mark, and returns them unchanged everywhere clients are read', async () => {
      const c = makeClient({ id: 'client-3', ...settings });
      await store().createClient(c, {});
      expect(await store().getClient('client-3')).toEqual(c);
      expect((await store().listClients()).find((x) => x.id === 'client-3')).toEqual(c);
      expect((await store().findClientAndToken('client-3', null)).client).toEqual(c);
      expect(await store().getClient('client-1')).toMatchObject({ redirectUris: [], grantTypes: ['refresh_token'], loginProvider: false, requireDpop: false });
    });

    it('replaces them with updateClientSettings, its audit line with it, and says false for an unknown client', async () => {
      const before = (await store().getClient('client-1'))!;
      expect((await store().findClientAndToken('client-1', null)).client).toEqual(before); // a read that may be kept
      const audit: AuditEntry = { at: T0, actor: 'cli:ops', action: 'client.update', target: 'client:client-1', count: 1, detail: '' };
      expect(await store().updateClientSettings('client-1', settings, { audit })).toBe(true);
      const after = { ...before, ...settings };
      expect(await store().getClient('client-1')).toEqual(after);
      expect((await store().findClientAndToken('client-1', null)).client).toEqual(after);
      expect((await store().listClients()).find((x) => x.id === 'client-1')).toEqual(after);
      expect(await store().updateClientSettings('nobody', settings, { audit: { ...audit, target: 'client:nobody' } })).toBe(false);
      expect(await store().getClient('nobody')).toBeNull();
      expect((await store().listAudit({})).map((e) => e.target)).toEqual(['client:client-1']);
      // And back to none: empty lists are lists, not one empty word.
      const none = { redirectUris: [], grantTypes: [], loginProvider: false, requireDpop: false };
      expect(await store().updateClientSettings('client-1', none, {})).toBe(true);
      expect(await store().getClient('client-1')).toEqual({ ...before, ...none });
      expect(await store().getClient('client-2')).toMatchObject({ redirectUris: [], grantTypes: ['refresh_token'], loginProvider: false, requireDpop: false });
    });

    it('returns copies of the lists: changing a returned client changes nothing stored', async () => {
      await store().updateClientSettings('client-1', settings, {});
      for (const read of [() => store().getClient('client-1'), async () => (await store().findClientAndToken('client-1', null)).client]) {
        const c = (await read())!;
        c.redirectUris.push('https://evil.example.test/');
        c.grantTypes.length = 0;
        expect(await read()).toMatchObject(settings);
      }
    });
  });

  describe('authorizations', () => {
    it('stores a request and finds it by its challenge, with every field as given', async () => {
      const a = request({ state: null, redirectUriSent: false });
      await store().createAuthorization(a);
      expect(await find(a)).toEqual(a);
      expect(await store().findAuthorization({ challengeDigest: 'no-such-challenge' })).toBeNull();
      // No verifier or code yet: nothing is found by them.
      expect(await store().findAuthorization({ verifierDigest: `verifier-${a.id}` })).toBeNull();
      expect(await store().findAuthorization({ codeDigest: `code-0-${a.id}` })).toBeNull();
    });

    it('keeps a request’s dpop_jkt (RFC 9449 §10) through acceptance and its code, and null for one without', async () => {
      const bound = request({ dpopJkt: '0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I' });
      const plain = request();
      await store().createAuthorization(bound);
      await store().createAuthorization(plain);
      expect(await store().decideAuthorization(bound.id, accept(bound), T0 + 1)).toBe(true);
      expect(await store().issueAuthorizationCode(bound.id, { codeDigest: `code-${bound.id}`, expiresAt: T0 + MINUTE, grantId: `grant-${bound.id}` }, T0 + 2)).toBe(true);
      expect((await store().findAuthorization({ codeDigest: `code-${bound.id}` }))?.dpopJkt).toBe('0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I');
      expect((await find(plain))?.dpopJkt).toBeNull();
    });

    it('refuses a second request with the same challenge', async () => {
      const a = request();
      await store().createAuthorization(a);
      await expect(store().createAuthorization(request({ challengeDigest: a.challengeDigest }))).rejects.toThrow();
      expect(await find(a)).toEqual(a);
    });

    it('records an acceptance once, found by its verifier; a second answer changes nothing', async () => {
      const a = request();
      await store().createAuthorization(a);
      expect(await store().decideAuthorization(a.id, accept(a), T0 + MINUTE)).toBe(true);
      const accepted = {
        ...a, status: 'accepted', decidedAt: T0 + MINUTE, verifierDigest: `verifier-${a.id}`, subject: 'alice-sub', username: 'alice', grantedScope: 'read',
      };
      expect(await find(a)).toEqual(accepted);
      expect(await store().findAuthorization({ verifierDigest: `verifier-${a.id}` })).toEqual(accepted);
      expect(await store().decideAuthorization(a.id, { ...reject(a), verifierDigest: 'verifier-other' }, T0 + 2 * MINUTE)).toBe(false);
      expect(await store().decideAuthorization(a.id, accept(a), T0 + 2 * MINUTE)).toBe(false);
      expect(await find(a)).toEqual(accepted);
      expect(await store().findAuthorization({ verifierDigest: 'verifier-other' })).toBeNull();
    });

    it('records a rejection with its error, and no user', async () => {
      const a = request();
      await store().createAuthorization(a);
      const decision: LoginDecision = { status: 'rejected', verifierDigest: `verifier-${a.id}`, error: 'access_denied', errorDescription: 'the user said no' };
      expect(await store().decideAuthorization(a.id, decision, T0 + MINUTE)).toBe(true);
      expect(await store().findAuthorization({ verifierDigest: `verifier-${a.id}` })).toEqual({
        ...a, status: 'rejected', decidedAt: T0 + MINUTE, verifierDigest: `verifier-${a.id}`, error: 'access_denied', errorDescription: 'the user said no',
      });
      const b = request();
      await store().createAuthorization(b);
      expect(await store().decideAuthorization(b.id, reject(b), T0 + MINUTE)).toBe(true);
      expect(await find(b)).toMatchObject({ status: 'rejected', error: 'access_denied', errorDescription: null, subject: null });
    });

    it('answers nothing at or after the request’s expiry, nor for an unknown request', async () => {
      const a = request();
      await store().createAuthorization(a);
      expect(await store().decideAuthorization(a.id, accept(a), a.expiresAt)).toBe(false);
      expect(await store().decideAuthorization(a.id, accept(a), a.expiresAt + MINUTE)).toBe(false);
      expect(await find(a)).toEqual(a);
      expect(await store().decideAuthorization(a.id, accept(a), a.expiresAt - 1)).toBe(true);
      expect(await store().decideAuthorization(randomUUID(), accept(request()), T0)).toBe(false);
    });

    it('issues one code, only for an accepted request, found by its digest', async () => {
      const pending = request();
      const rejected = request();
      await store().createAuthorization(pending);
      await store().createAuthorization(rejected);
      await store().decideAuthorization(rejected.id, reject(rejected), T0 + MINUTE);
      expect(await store().issueAuthorizationCode(pending.id, code(pending), T0 + MINUTE)).toBe(false);
      expect(await store().issueAuthorizationCode(rejected.id, code(rejected), T0 + MINUTE)).toBe(false);
      expect(await store().issueAuthorizationCode(randomUUID(), code(pending), T0 + MINUTE)).toBe(false);
      expect(await find(pending)).toMatchObject({ codeDigest: null, codeExpiresAt: null, grantId: null });
      expect(await find(rejected)).toMatchObject({ codeDigest: null, codeExpiresAt: null, grantId: null });

      const { a, c } = await withCode();
      const issued = { codeDigest: c.codeDigest, codeExpiresAt: c.expiresAt, grantId: c.grantId };
      expect(await store().findAuthorization({ codeDigest: c.codeDigest })).toEqual({ ...(await find(a)), ...issued });
      expect(await find(a)).toMatchObject({ status: 'accepted', ...issued, redeemedAt: null });
      // One code per authorization: a second one is refused, and the first stays.
      expect(await store().issueAuthorizationCode(a.id, code(a, 1), T0 + MINUTE)).toBe(false);
      expect(await find(a)).toMatchObject(issued);
      expect(await store().findAuthorization({ codeDigest: code(a, 1).codeDigest })).toBeNull();
    });

    it('issues no code at or after the request’s expiry', async () => {
      const a = request();
      await store().createAuthorization(a);
      await store().decideAuthorization(a.id, accept(a), T0 + MINUTE);
      expect(await store().issueAuthorizationCode(a.id, code(a), a.expiresAt)).toBe(false);
      expect(await find(a)).toMatchObject({ codeDigest: null });
      expect(await store().issueAuthorizationCode(a.id, code(a), a.expiresAt - 1)).toBe(true);
    });

    it('redeems a code once: the tokens and the audit line are stored with it; again it is used, and nothing is written', async () => {
      const { a, c } = await withCode();
      const tokens = grantOf(c);
      const at = T0 + MINUTE + 1;
      expect(await store().redeemAuthorizationCode(c.codeDigest, at, tokens, { audit: line(`grant:${c.grantId}`) })).toBe('redeemed');
      for (const t of tokens) expect(await store().findTokenByJti(t.jti)).toEqual(t);
      expect(await find(a)).toMatchObject({ redeemedAt: at });
      const again = grantOf(c).map((t) => ({ ...t, grantId: 'grant-again' }));
      expect(await store().redeemAuthorizationCode(c.codeDigest, at + 1, again, { audit: line('grant:grant-again') })).toBe('used');
      // Used, not invalid, even once the code has expired: the caller still revokes the grant.
      expect(await store().redeemAuthorizationCode(c.codeDigest, c.expiresAt + MINUTE, again, { audit: line('grant:grant-again') })).toBe('used');
      for (const t of again) expect(await store().findTokenByJti(t.jti)).toBeNull();
      expect(await store().listTokens({ clientId: 'client-1' })).toHaveLength(2);
      expect((await store().listAudit({})).map((e) => [e.action, e.target])).toEqual([['token.issue', `grant:${c.grantId}`]]);
      expect(await find(a)).toMatchObject({ redeemedAt: at });
    });

    it('refuses an unknown or expired code as invalid, writing nothing', async () => {
      const { a, c } = await withCode();
      const tokens = grantOf(c);
      expect(await store().redeemAuthorizationCode('no-such-code', T0 + MINUTE, tokens, { audit: line('x') })).toBe('invalid');
      expect(await store().redeemAuthorizationCode(c.codeDigest, c.expiresAt, tokens, { audit: line('x') })).toBe('invalid');
      expect(await store().redeemAuthorizationCode(c.codeDigest, c.expiresAt + MINUTE, tokens, { audit: line('x') })).toBe('invalid');
      for (const t of tokens) expect(await store().findTokenByJti(t.jti)).toBeNull();
      expect(await store().listAudit({})).toEqual([]);
      expect(await find(a)).toMatchObject({ redeemedAt: null });
      // Not yet expired, it redeems.
      expect(await store().redeemAuthorizationCode(c.codeDigest, c.expiresAt - 1, tokens, {})).toBe('redeemed');
    });

    it('redeems in one transaction: when the tokens cannot be stored, the code stays unredeemed', async () => {
      const { a, c } = await withCode();
      const [taken] = grantOf(c);
      await store().insertTokens([taken!]);
      const clash = grantOf(c).map((t, i) => (i === 0 ? { ...t, jti: taken!.jti } : t));
      await expect(store().redeemAuthorizationCode(c.codeDigest, T0 + MINUTE, clash, { audit: line('x') })).rejects.toThrow();
      expect(await find(a)).toMatchObject({ redeemedAt: null });
      expect(await store().findTokenByJti(clash[1]!.jti)).toBeNull();
      expect(await store().listAudit({})).toEqual([]);
      expect(await store().redeemAuthorizationCode(c.codeDigest, T0 + MINUTE, grantOf(c), {})).toBe('redeemed');
    });

    it('lets exactly one of concurrent redemptions of a code redeem it', async () => {
      const { c } = await withCode();
      const attempts = Array.from({ length: 8 }, () => grantOf(c));
      const outcomes = await Promise.all(attempts.map((tokens) => store().redeemAuthorizationCode(c.codeDigest, T0 + MINUTE, tokens, {})));
      expect(outcomes.filter((o) => o === 'redeemed')).toHaveLength(1);
      expect(outcomes.filter((o) => o === 'used')).toHaveLength(7);
      const winner = attempts[outcomes.indexOf('redeemed')]!;
      expect((await store().listTokens({ clientId: 'client-1' })).map((t) => t.jti).sort()).toEqual(winner.map((t) => t.jti).sort());
    });

    it('purges, up to the limit, the requests whose challenge and code both ended before the instant', async () => {
      const before = T0 + 20 * MINUTE;
      const gone = [
        request({ expiresAt: before - 1 }), // never answered
        request({ expiresAt: before - 10 * MINUTE, codeDigest: 'c-gone', codeExpiresAt: before - 1, status: 'accepted', verifierDigest: 'v-gone' }),
      ];
      const kept = [
        request({ expiresAt: before }), // ends exactly at the cut-off: not before it
        request({ expiresAt: before + MINUTE }),
        request({ expiresAt: before - MINUTE, codeDigest: 'c-kept', codeExpiresAt: before, status: 'accepted', verifierDigest: 'v-kept' }),
      ];
      for (const a of [...gone, ...kept]) await store().createAuthorization(a);
      expect(await store().purgeAuthorizations(before, 0)).toBe(0);
      expect(await store().purgeAuthorizations(before, 1)).toBe(1);
      expect(await store().purgeAuthorizations(before, 5)).toBe(1);
      expect(await store().purgeAuthorizations(before, 5)).toBe(0);
      for (const a of gone) expect(await find(a)).toBeNull();
      expect(await store().findAuthorization({ codeDigest: 'c-gone' })).toBeNull();
      for (const a of kept) expect(await find(a)).toEqual(a);
    });

    it('deletes a client’s requests with the client, and no one else’s', async () => {
      const { a, c } = await withCode();
      const theirs = request({ clientId: 'client-2' });
      await store().createAuthorization(theirs);
      expect(await store().deleteClient('client-1', {})).toBe(true);
      expect(await find(a)).toBeNull();
      expect(await store().findAuthorization({ codeDigest: c.codeDigest })).toBeNull();
      expect(await store().redeemAuthorizationCode(c.codeDigest, T0 + MINUTE, [], {})).toBe('invalid');
      expect(await find(theirs)).toEqual(theirs);
    });
  });
}
