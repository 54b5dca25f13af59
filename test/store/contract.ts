import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DuplicateClientError, tokenState, type AuditEntry, type BulkSelector, type ClientRecord, type TokenRecord, type TokenStore } from '../../src/store/store.js';
import { HOUR, MINUTE, T0, makeClient, makeGrant, makeToken } from '../helpers/records.js';
import { describeAuthorizationContract } from './authorizations-contract.js';

export type StoreFactory = () => Promise<{ store: TokenStore; cleanup: () => Promise<void> }>;

/**
 * The one contract every {@link TokenStore} must meet; MemoryStore is its reference. Each test
 * gets a fresh, empty store holding one client, `client-1`. Nothing here may depend on a
 * particular backend: the same suite runs against SQLite and PostgreSQL.
 */
export function describeStoreContract(name: string, factory: StoreFactory): void {
  describe(`TokenStore contract: ${name}`, () => {
    let store: TokenStore;
    let cleanup: () => Promise<void>;
    let client: ClientRecord;
    let other: ClientRecord;

    beforeEach(async () => {
      ({ store, cleanup } = await factory());
      client = makeClient({ id: 'client-1' });
      other = makeClient({ id: 'client-2', createdAt: T0 + 1 });
      await store.createClient(client, {});
      await store.createClient(other, {});
    });
    afterEach(async () => {
      await cleanup();
    });

    /** A token of client-1 unless told otherwise. */
    const tok = (o: Partial<TokenRecord> = {}) => makeToken({ clientId: 'client-1', ...o });
    const grant = (o: Omit<Partial<TokenRecord>, 'jti' | 'digest' | 'type'> = {}) => makeGrant({ clientId: 'client-1', ...o });
    const insert = async (...tokens: TokenRecord[]) => {
      await store.insertTokens(tokens);
      return tokens;
    };
    const get = async (t: TokenRecord) => store.findTokenByJti(t.jti);
    const revokedAt = async (t: TokenRecord) => (await get(t))?.revokedAt;
    /** A whole bulk revocation: batches until the store says there is no more; the tokens revoked. */
    const revokeAll = async (selector: BulkSelector, at: number, limit = 1000, audit?: AuditEntry) => {
      let revoked = 0;
      let resume: string | undefined;
      for (let more = true, calls = 0; more; calls++) {
        if (calls > 100) throw new Error('revokeBulk never said it was done');
        const batch = await store.revokeBulk(selector, at, limit, resume, { audit });
        revoked += batch.revoked;
        more = batch.more;
        resume = batch.resume;
      }
      return revoked;
    };
    const auditEntry = (target: string): AuditEntry => ({ at: AT, actor: 'cli:op', action: 'token.revoke_bulk', target, count: 0, detail: 'x' });

    describe('clients', () => {
      it('stores a client and returns it unchanged', async () => {
        const pub = makeClient({ secretHash: null, accessTtlMs: 5 * MINUTE, refreshTtlMs: 2 * HOUR, scope: '' });
        await store.createClient(pub, {});
        expect(await store.getClient(pub.id)).toEqual(pub);
        expect(await store.getClient('client-1')).toEqual(client);
      });

      it('answers null for an unknown client', async () => {
        expect(await store.getClient('nobody')).toBeNull();
      });

      it('rejects a duplicate id with DuplicateClientError and keeps the first', async () => {
        const dup = makeClient({ id: 'client-1', name: 'impostor' });
        await expect(store.createClient(dup, {})).rejects.toBeInstanceOf(DuplicateClientError);
        await expect(store.createClient(dup, {})).rejects.toMatchObject({ clientId: 'client-1' });
        expect((await store.getClient('client-1'))?.name).toBe(client.name);
      });

      it('lists clients by creation time, then id', async () => {
        await store.createClient(makeClient({ id: 'z-late', createdAt: T0 + 5 }), {});
        await store.createClient(makeClient({ id: 'm-mid', createdAt: T0 + 3 }), {});
        await store.createClient(makeClient({ id: 'a-mid', createdAt: T0 + 3 }), {});
        expect((await store.listClients()).map((c) => c.id)).toEqual(['client-1', 'client-2', 'a-mid', 'm-mid', 'z-late']);
      });

      it('replaces a secret hash and its time, and says false for an unknown client', async () => {
        expect(await store.updateClientSecret('client-1', 'scrypt$new', T0 + HOUR, {})).toBe(true);
        expect(await store.getClient('client-1')).toEqual({ ...client, secretHash: 'scrypt$new', secretUpdatedAt: T0 + HOUR });
        expect(await store.updateClientSecret('nobody', 'scrypt$x', T0, {})).toBe(false);
        expect(await store.getClient('nobody')).toBeNull();
      });

      it('deletes a client with its tokens, and no one else’s', async () => {
        const [mine] = await insert(tok());
        const [theirs] = await insert(tok({ clientId: 'client-2' }));
        expect(await store.deleteClient('client-1', {})).toBe(true);
        expect(await store.getClient('client-1')).toBeNull();
        expect(await store.findTokenByJti(mine!.jti)).toBeNull();
        expect(await store.findTokenByDigest(mine!.digest)).toBeNull();
        expect(await store.findTokenByJti(theirs!.jti)).toEqual(theirs);
        expect(await store.deleteClient('client-1', {})).toBe(false);
      });

      it('writes the audit line it is given with the change, and none when nothing changed', async () => {
        const line = (action: string, target: string) => ({ at: T0, actor: 'cli:ops', action, target, count: 1, detail: '' });
        const lines = async () => (await store.listAudit({})).map((a) => [a.actor, a.action, a.target]).reverse(); // oldest first
        await store.createClient(makeClient({ id: 'client-3' }), { audit: line('client.create', 'client:client-3') });
        await expect(store.createClient(makeClient({ id: 'client-3' }), { audit: line('client.create', 'client:again') })).rejects.toThrow(DuplicateClientError);
        expect(await store.updateClientSecret('client-3', 'scrypt$new', T0 + 1, { audit: line('client.rotate_secret', 'client:client-3') })).toBe(true);
        expect(await store.updateClientSecret('nobody', 'scrypt$new', T0 + 1, { audit: line('client.rotate_secret', 'client:nobody') })).toBe(false);
        expect(await store.deleteClient('client-3', { audit: line('client.delete', 'client:client-3') })).toBe(true);
        expect(await store.deleteClient('client-3', { audit: line('client.delete', 'client:gone') })).toBe(false);
        expect(await lines()).toEqual([
          ['cli:ops', 'client.create', 'client:client-3'],
          ['cli:ops', 'client.rotate_secret', 'client:client-3'],
          ['cli:ops', 'client.delete', 'client:client-3'],
        ]);
      });

      it('returns copies: changing a returned record changes nothing stored', async () => {
        const c = await store.getClient('client-1');
        c!.name = 'changed';
        expect((await store.getClient('client-1'))?.name).toBe(client.name);
      });
    });

    // The authorization code flow's requests, and the client settings it reads (authorizations-contract.ts).
    describeAuthorizationContract(() => store);

    describe('tokens', () => {
      it('stores tokens and finds them by jti and by digest', async () => {
        const { refresh, access } = grant();
        const odd = tok({ revokedAt: T0 + 1, replacedAt: T0 + 2, replacedBy: 'x', scope: '', node: 'n2' });
        await insert(refresh, access, odd);
        for (const t of [refresh, access, odd]) {
          expect(await store.findTokenByJti(t.jti)).toEqual(t);
          expect(await store.findTokenByDigest(t.digest)).toEqual(t);
        }
      });

      it('answers null for an unknown jti or digest', async () => {
        await insert(tok());
        expect(await store.findTokenByJti('00000000-0000-4000-8000-000000000000')).toBeNull();
        expect(await store.findTokenByDigest('no-such-digest')).toBeNull();
      });

      it('inserts all or nothing: a duplicate jti rejects the whole batch', async () => {
        const [first] = await insert(tok());
        const fresh = tok();
        await expect(store.insertTokens([fresh, { ...first!, digest: 'another-digest' }])).rejects.toThrow();
        expect(await get(fresh)).toBeNull();
        expect(await get(first!)).toEqual(first);
      });

      it('rejects a duplicate digest', async () => {
        const [first] = await insert(tok());
        const clash = tok({ digest: first!.digest });
        await expect(store.insertTokens([clash])).rejects.toThrow();
        expect(await get(clash)).toBeNull();
        expect(await store.findTokenByDigest(first!.digest)).toEqual(first);
      });

      it('lists tokens by client, user and type', async () => {
        const g = grant({ username: 'alice' });
        const bob = tok({ username: 'bob' });
        const elsewhere = tok({ username: 'alice', clientId: 'client-2' });
        await insert(g.refresh, g.access, bob, elsewhere);
        const jtis = async (f: Parameters<TokenStore['listTokens']>[0]) => (await store.listTokens(f)).map((t) => t.jti).sort();
        expect(await jtis({})).toEqual([g.refresh, g.access, bob, elsewhere].map((t) => t.jti).sort());
        expect(await jtis({ clientId: 'client-1' })).toEqual([g.refresh, g.access, bob].map((t) => t.jti).sort());
        expect(await jtis({ username: 'alice' })).toEqual([g.refresh, g.access, elsewhere].map((t) => t.jti).sort());
        expect(await jtis({ clientId: 'client-1', username: 'alice', type: 'refresh_token' })).toEqual([g.refresh.jti]);
        expect(await jtis({ type: 'access_token', username: 'bob' })).toEqual([bob.jti]);
        expect(await jtis({ clientId: 'nobody' })).toEqual([]);
      });

      it('lists tokens by state at the given instant; replaced counts as revoked', async () => {
        const now = T0 + 30 * MINUTE;
        const active = tok({ expiresAt: T0 + HOUR });
        const expired = tok({ expiresAt: T0 + 10 * MINUTE });
        const endsNow = tok({ expiresAt: now });
        const revoked = tok({ revokedAt: T0 });
        const replaced = tok({ type: 'refresh_token', expiresAt: T0 + 24 * HOUR, replacedAt: T0, replacedBy: 'next' });
        const revokedAndExpired = tok({ expiresAt: T0 + MINUTE, revokedAt: T0 });
        await insert(active, expired, endsNow, revoked, replaced, revokedAndExpired);
        const jtis = async (state: 'active' | 'expired' | 'revoked') => (await store.listTokens({ state, now })).map((t) => t.jti).sort();
        expect(await jtis('active')).toEqual([active.jti]);
        expect(await jtis('expired')).toEqual([expired.jti, endsNow.jti].sort());
        expect(await jtis('revoked')).toEqual([revoked.jti, replaced.jti, revokedAndExpired.jti].sort());
        expect(await jtis('active')).toEqual((await store.listTokens({ now })).filter((t) => tokenState(t, now) === 'active').map((t) => t.jti));
        expect((await store.listTokens({ state: 'active', now: T0 + 5 * HOUR })).map((t) => t.jti)).toEqual([]);
      });

      it('lists newest first and honours the limit', async () => {
        const [a, b, c] = await insert(tok({ issuedAt: T0 }), tok({ issuedAt: T0 + 2 }), tok({ issuedAt: T0 + 1 }));
        expect((await store.listTokens({})).map((t) => t.jti)).toEqual([b!.jti, c!.jti, a!.jti]);
        expect((await store.listTokens({ limit: 2 })).map((t) => t.jti)).toEqual([b!.jti, c!.jti]);
        expect(await store.listTokens({ limit: 0 })).toEqual([]);
      });

      it('pages with a cursor (the last token of a page), ties by jti, and counts what the filter matches', async () => {
        // Five tokens, two of them issued at the same instant: the tie is broken by jti.
        const made = await insert(
          tok({ issuedAt: T0, username: 'p' }),
          tok({ issuedAt: T0 + 1, username: 'p' }),
          tok({ issuedAt: T0 + 1, username: 'p' }),
          tok({ issuedAt: T0 + 2, username: 'p' }),
          tok({ issuedAt: T0 + 3, username: 'other' }),
        );
        const all = (await store.listTokens({ username: 'p' })).map((t) => t.jti);
        expect(all).toHaveLength(4);
        const pages: string[][] = [];
        let after: { issuedAt: number; jti: string } | undefined;
        for (;;) {
          const page = await store.listTokens({ username: 'p', limit: 2, after });
          if (page.length === 0) break;
          pages.push(page.map((t) => t.jti));
          const last = page[page.length - 1]!;
          after = { issuedAt: last.issuedAt, jti: last.jti };
        }
        expect(pages).toHaveLength(2);
        expect(pages.flat()).toEqual(all);
        expect(await store.countTokens({ username: 'p' })).toBe(4);
        expect(await store.countTokens({ username: 'p', limit: 1, after: { issuedAt: T0 + 2, jti: made[3]!.jti } })).toBe(4);
        expect(await store.countTokens({})).toBe(5);
        expect(await store.countTokens({ state: 'active', now: T0 + 30 * MINUTE })).toBe(5);
        expect(await store.countTokens({ state: 'expired', now: T0 + 2 * HOUR })).toBe(5);
        expect(await store.countTokens({ clientId: 'nobody' })).toBe(0);
      });

      it('finds a client and a token in one read', async () => {
        const [t] = await insert(tok({ clientId: 'client-2', revokedAt: T0 }));
        expect(await store.findClientAndToken('client-1', t!.digest)).toEqual({ client, token: t });
        expect(await store.findClientAndToken('nobody', t!.digest)).toEqual({ client: null, token: t });
        expect(await store.findClientAndToken('client-2', 'no-such-digest')).toEqual({ client: other, token: null });
        expect(await store.findClientAndToken('client-1', null)).toEqual({ client, token: null });
        // Copies, and what a change of the client since shows at once.
        const found = await store.findClientAndToken('client-1', t!.digest);
        found.client!.name = 'changed';
        found.token!.revokedAt = null;
        expect(await store.findClientAndToken('client-1', t!.digest)).toEqual({ client, token: t });
        await store.updateClientSecret('client-1', 'new-hash', T0 + 5, {});
        expect((await store.findClientAndToken('client-1', null)).client).toMatchObject({ secretHash: 'new-hash', secretUpdatedAt: T0 + 5 });
      });

      it('scans every token once, a page at a time, whatever its client, type or state', async () => {
        const g = grant();
        const all = await insert(g.refresh, g.access, tok({ revokedAt: T0 }), tok({ expiresAt: T0 + 1 }), tok({ clientId: 'client-2' }), tok(), tok());
        const seen: TokenRecord[] = [];
        const pages: number[] = [];
        for (let after: string | null = null; ; ) {
          const page = await store.scanTokens(after, 3);
          if (page.length === 0) break;
          pages.push(page.length);
          seen.push(...page);
          after = page[page.length - 1]!.jti;
        }
        expect(pages).toEqual([3, 3, 1]);
        const byJti = (a: TokenRecord, b: TokenRecord) => (a.jti < b.jti ? -1 : 1);
        expect([...seen].sort(byJti)).toEqual([...all].sort(byJti)); // every field, every token, once
        expect(await store.scanTokens(null, 0)).toEqual([]);
        expect(await store.scanTokens(seen[seen.length - 1]!.jti, 10)).toEqual([]);
        // A page starts right after the jti given, even if that token is gone since.
        expect((await store.scanTokens(seen[2]!.jti, 2)).map((t) => t.jti)).toEqual([seen[3]!.jti, seen[4]!.jti]);
      });

      it('finds tokens by a list of jtis, leaving out unknown ones', async () => {
        const [a, b] = await insert(tok(), tok({ clientId: 'client-2', revokedAt: T0 }), tok());
        const found = await store.findTokensByJti([b!.jti, '00000000-0000-4000-8000-000000000000', a!.jti, a!.jti]);
        expect(found.sort((x, y) => (x.jti < y.jti ? -1 : 1))).toEqual([a!, b!].sort((x, y) => (x.jti < y.jti ? -1 : 1)));
        expect(await store.findTokensByJti([])).toEqual([]);
      });

      it('returns copies of tokens', async () => {
        const [t] = await insert(tok());
        const found = await get(t!);
        found!.revokedAt = 1;
        expect(await revokedAt(t!)).toBeNull();
      });
    });

    /** alice at client-1 (a grant and a lone access token), alice at client-2, bob at client-1, plus an expired and a revoked token. */
    async function population() {
      const aliceGrant = grant({ username: 'alice' });
      const alice1 = tok({ username: 'alice' });
      const alice2 = tok({ username: 'alice', clientId: 'client-2' });
      const bob1 = tok({ username: 'bob' });
      const expired = tok({ username: 'alice', expiresAt: T0 + MINUTE });
      const revoked = tok({ username: 'alice', revokedAt: T0 + MINUTE });
      await insert(aliceGrant.refresh, aliceGrant.access, alice1, alice2, bob1, expired, revoked);
      return { aliceGrant, alice1, alice2, bob1, expired, revoked };
    }
    const AT = T0 + 10 * MINUTE;

    describe('countRevocable', () => {
      it('counts the active tokens each selector names', async () => {
        const p = await population();
        expect(await store.countRevocable({ username: 'alice' }, AT)).toBe(4);
        expect(await store.countRevocable({ username: 'alice', clientId: 'client-1' }, AT)).toBe(3);
        expect(await store.countRevocable({ clientId: 'client-1' }, AT)).toBe(4);
        expect(await store.countRevocable({ clientId: 'client-2' }, AT)).toBe(1);
        expect(await store.countRevocable({ jti: p.bob1.jti }, AT)).toBe(1);
        expect(await store.countRevocable({ jti: p.expired.jti }, AT)).toBe(0);
        expect(await store.countRevocable({ jti: p.revoked.jti }, AT)).toBe(0);
        expect(await store.countRevocable({ username: 'nobody' }, AT)).toBe(0);
        expect(await store.countRevocable({ username: 'alice' }, T0 + 2 * HOUR)).toBe(1); // only the refresh token lives that long
      });
    });

    describe('revokeToken', () => {
      it('lets the first revocation win; later ones change nothing', async () => {
        const [t] = await insert(tok());
        expect(await store.revokeToken(t!.jti, T0 + 1, false, {})).toBe(true);
        expect(await store.revokeToken(t!.jti, T0 + 2, false, {})).toBe(false);
        expect(await revokedAt(t!)).toBe(T0 + 1);
      });

      it('answers false for an unknown jti', async () => {
        expect(await store.revokeToken('00000000-0000-4000-8000-000000000000', T0, false, {})).toBe(false);
      });

      it('without cascade leaves the rest of the grant alone', async () => {
        const g = grant();
        await insert(g.refresh, g.access);
        expect(await store.revokeToken(g.refresh.jti, AT, false, {})).toBe(true);
        expect(await revokedAt(g.access)).toBeNull();
      });

      it('with cascade revokes every not-yet-revoked token of the grant, and of no other grant', async () => {
        const g = grant();
        const access2 = tok({ grantId: g.refresh.grantId, revokedAt: T0 + 1 });
        const unrelated = tok();
        await insert(g.refresh, g.access, access2, unrelated);
        expect(await store.revokeToken(g.refresh.jti, AT, true, {})).toBe(true);
        expect(await revokedAt(g.refresh)).toBe(AT);
        expect(await revokedAt(g.access)).toBe(AT);
        expect(await revokedAt(access2)).toBe(T0 + 1);
        expect(await revokedAt(unrelated)).toBeNull();
      });

      it('cascades only when this call revoked the token', async () => {
        const g = grant();
        await insert(g.refresh, g.access);
        await store.revokeToken(g.refresh.jti, T0 + 1, false, {});
        expect(await store.revokeToken(g.refresh.jti, AT, true, {})).toBe(false);
        expect(await revokedAt(g.access)).toBeNull();
      });

      it('appends the audit entry given only when this call revoked the token', async () => {
        const g = grant();
        await insert(g.refresh, g.access);
        const entry = (jti: string): AuditEntry => ({ at: AT, actor: 'client-1', action: 'token.revoke', target: `${jti} client:client-1`, count: 1, detail: 'x' });
        expect(await store.revokeToken(g.access.jti, AT, false, { audit: entry(g.access.jti) })).toBe(true);
        expect(await store.revokeToken(g.access.jti, AT + 1, false, { audit: entry(g.access.jti) })).toBe(false);
        expect(await store.revokeToken(g.refresh.jti, AT, true, { audit: entry(g.refresh.jti) })).toBe(true);
        expect(await store.revokeToken('00000000-0000-4000-8000-000000000000', AT, false, { audit: entry('none') })).toBe(false);
        const trail = await store.listAudit({});
        expect(trail.map((e) => e.target)).toEqual([`${g.refresh.jti} client:client-1`, `${g.access.jti} client:client-1`]);
        expect(trail[1]).toMatchObject({ at: AT, actor: 'client-1', action: 'token.revoke', count: 1, detail: 'x' });
        expect(await revokedAt(g.access)).toBe(AT);
      });
    });

    describe('insertMintedAccess', () => {
      it('inserts the access token while its refresh token is current', async () => {
        const g = grant();
        await insert(g.refresh);
        expect(await store.insertMintedAccess(g.access, g.refresh.jti)).toBe('inserted');
        expect(await get(g.access)).toEqual(g.access);
      });

      it('leaves no active token when the refresh token was revoked or replaced meanwhile', async () => {
        const revoked = grant();
        const replaced = grant();
        await insert(revoked.refresh, replaced.refresh);
        await store.revokeToken(revoked.refresh.jti, AT, false, {});
        const next = tok({ type: 'refresh_token', grantId: replaced.refresh.grantId });
        expect(await store.rotateRefreshToken(replaced.refresh.jti, [next], AT)).toBe('rotated');
        expect(await store.insertMintedAccess(revoked.access, revoked.refresh.jti)).toBe('revoked');
        expect(await store.insertMintedAccess(replaced.access, replaced.refresh.jti)).toBe('revoked');
        for (const t of [revoked.access, replaced.access]) {
          const stored = await get(t);
          expect(stored === null || tokenState(stored, AT) !== 'active').toBe(true);
        }
      });

      it('with a limit, inserts nothing once the grant has that many tokens issued in the window', async () => {
        const g = grant({ issuedAt: T0 });
        await insert(g.refresh);
        const minted = (issuedAt: number) => tok({ grantId: g.refresh.grantId, issuedAt, notBefore: issuedAt });
        const [a1, a2, a3, late] = [minted(T0 + 1), minted(T0 + 2), minted(T0 + 3), minted(T0 + MINUTE + 5)];
        const limit = { since: T0 + 3 - MINUTE, max: 3 };
        expect(await store.insertMintedAccess(a1!, g.refresh.jti, limit)).toBe('inserted');
        expect(await store.insertMintedAccess(a2!, g.refresh.jti, limit)).toBe('inserted');
        // The refresh token and two access tokens in the window: the third is refused.
        expect(await store.insertMintedAccess(a3!, g.refresh.jti, limit)).toBe('limited');
        expect(await get(a3!)).toBeNull();
        // A minute later the window holds none of them.
        expect(await store.insertMintedAccess(late!, g.refresh.jti, { since: T0 + 5, max: 3 })).toBe('inserted');
        // A revoked grant is revoked, whatever its count.
        await store.revokeGrant(g.refresh.grantId, T0 + MINUTE + 6, {});
        expect(await store.insertMintedAccess(minted(T0 + MINUTE + 7), g.refresh.jti, { since: 0, max: 1 })).toBe('revoked');
      });

      it('answers unknown when the refresh token is gone', async () => {
        const g = grant();
        expect(await store.insertMintedAccess(g.access, g.refresh.jti)).toBe('unknown');
        const stored = await get(g.access);
        expect(stored === null || tokenState(stored, AT) !== 'active').toBe(true);
      });
    });

    describe('revokeGrant', () => {
      it('revokes the not-yet-revoked tokens of one grant and says how many', async () => {
        const g = grant();
        const done = tok({ grantId: g.refresh.grantId, revokedAt: T0 + 1 });
        const unrelated = tok();
        await insert(g.refresh, g.access, done, unrelated);
        expect(await store.revokeGrant(g.refresh.grantId, AT, {})).toBe(2);
        expect(await revokedAt(g.refresh)).toBe(AT);
        expect(await revokedAt(g.access)).toBe(AT);
        expect(await revokedAt(done)).toBe(T0 + 1);
        expect(await revokedAt(unrelated)).toBeNull();
        expect(await store.revokeGrant(g.refresh.grantId, AT + 1, {})).toBe(0);
        expect(await store.revokeGrant('no-such-grant', AT, {})).toBe(0);
      });
    });

    describe('a grant revocation is final', () => {
      it('revokeGrant appends its audit entry, counted, in the same step, and none when nothing changed', async () => {
        const g = grant();
        await insert(g.refresh, g.access);
        const entry: AuditEntry = { at: AT, actor: 'client-1', action: 'token.reuse_detected', target: `grant:${g.refresh.grantId}`, count: 0, detail: 'x' };
        expect(await store.revokeGrant(g.refresh.grantId, AT, { audit: entry })).toBe(2);
        expect(await store.revokeGrant(g.refresh.grantId, AT + 1, { audit: entry })).toBe(0);
        const trail = await store.listAudit({});
        expect(trail).toHaveLength(1);
        expect(trail[0]).toMatchObject({ action: 'token.reuse_detected', count: 2 });
      });

      it('after revokeGrant, nothing can be minted or rotated from the grant', async () => {
        const g = grant();
        await insert(g.refresh);
        await store.revokeGrant(g.refresh.grantId, AT, {});
        expect(await store.insertMintedAccess(g.access, g.refresh.jti)).not.toBe('inserted');
        const next = tok({ type: 'refresh_token', grantId: g.refresh.grantId });
        const access = tok({ grantId: g.refresh.grantId });
        expect(await store.rotateRefreshToken(g.refresh.jti, [next, access], AT + 1)).toBe('conflict');
        for (const t of [g.access, next, access]) {
          const stored = await get(t);
          expect(stored === null || tokenState(stored, AT + 1) !== 'active').toBe(true);
        }
      });

      it('revokeGrant revokes a replaced refresh token’s successors too', async () => {
        const g = grant();
        await insert(g.refresh, g.access);
        const next = tok({ type: 'refresh_token', grantId: g.refresh.grantId });
        const access = tok({ grantId: g.refresh.grantId });
        expect(await store.rotateRefreshToken(g.refresh.jti, [next, access], AT)).toBe('rotated');
        expect(await store.revokeGrant(g.refresh.grantId, AT + 1, {})).toBe(4);
        for (const t of [g.refresh, g.access, next, access]) expect(await revokedAt(t)).toBe(AT + 1);
      });

      it('a client deleted leaves nothing to mint from', async () => {
        const g = grant();
        await insert(g.refresh);
        expect(await store.deleteClient('client-1', {})).toBe(true);
        expect(await store.insertMintedAccess(g.access, g.refresh.jti)).not.toBe('inserted');
        const stored = await get(g.access);
        expect(stored === null || tokenState(stored, AT) !== 'active').toBe(true);
      });
    });

    describe('revokeBulk in batches', () => {
      it('a user in batches of one: several short steps, every live token revoked in the end, one audit line per step that changed something', async () => {
        const p = await population();
        const sizes: number[] = [];
        let resume: string | undefined;
        for (let more = true; more; ) {
          const batch = await store.revokeBulk({ username: 'alice' }, AT, 1, resume, { audit: auditEntry('user:alice') });
          sizes.push(batch.revoked);
          more = batch.more;
          resume = batch.resume;
          if (sizes.length > 20) throw new Error('never done');
        }
        expect(sizes.length).toBeGreaterThanOrEqual(3);
        expect(Math.max(...sizes)).toBeLessThanOrEqual(2); // one token, or one grant of two
        expect(sizes.reduce((a, b) => a + b, 0)).toBe(4);
        for (const t of [p.aliceGrant.refresh, p.aliceGrant.access, p.alice1, p.alice2]) expect(await revokedAt(t)).toBe(AT);
        expect(await revokedAt(p.bob1)).toBeNull();
        const trail = await store.listAudit({});
        expect(trail.every((e) => e.action === 'token.revoke_bulk' && e.count > 0)).toBe(true);
        expect(trail.reduce((n, e) => n + e.count, 0)).toBe(4);
      });

      it('a token minted between two batches is revoked by a later one, and none can be minted after the last', async () => {
        const grants = [grant({ username: 'erin' }), grant({ username: 'erin' }), grant({ username: 'erin' })];
        await insert(...grants.map((g) => g.refresh));
        const first = await store.revokeBulk({ username: 'erin' }, AT, 1, undefined, {});
        expect(first.more).toBe(true);
        // Between batches: a refresh of whichever grant is still live mints an access token.
        const outcomes = await Promise.all(grants.map((g) => store.insertMintedAccess(g.access, g.refresh.jti)));
        expect(outcomes).toContain('inserted');
        let resume = first.resume;
        for (let more = true; more; ) {
          const batch = await store.revokeBulk({ username: 'erin' }, AT, 1, resume, {});
          more = batch.more;
          resume = batch.resume;
        }
        for (const g of grants) {
          for (const t of [g.refresh, g.access]) {
            const stored = await get(t);
            expect(stored === null || tokenState(stored, AT) !== 'active').toBe(true);
          }
          const late = tok({ grantId: g.refresh.grantId, username: 'erin' });
          expect(await store.insertMintedAccess(late, g.refresh.jti)).not.toBe('inserted');
        }
      });

      it('by jti is one step, whatever the limit', async () => {
        const g = grant({ username: 'fay' });
        const second = tok({ username: 'fay', grantId: g.refresh.grantId });
        await insert(g.refresh, g.access, second);
        expect(await store.revokeBulk({ jti: g.refresh.jti }, AT, 1, undefined, {})).toEqual({ revoked: 3, more: false });
      });
    });

    describe('revokeBulk', () => {
      it('by jti revokes one active token, once', async () => {
        const p = await population();
        expect(await revokeAll({ jti: p.bob1.jti }, AT)).toBe(1);
        expect(await revokedAt(p.bob1)).toBe(AT);
        expect(await revokedAt(p.alice1)).toBeNull();
        expect(await revokeAll({ jti: p.bob1.jti }, AT + 1)).toBe(0);
        expect(await revokedAt(p.bob1)).toBe(AT);
      });

      it('by jti of a refresh token also revokes its grant’s access tokens', async () => {
        const p = await population();
        const access2 = tok({ grantId: p.aliceGrant.refresh.grantId, username: 'alice' });
        await insert(access2);
        expect(await revokeAll({ jti: p.aliceGrant.refresh.jti }, AT)).toBe(3);
        for (const t of [p.aliceGrant.refresh, p.aliceGrant.access, access2]) expect(await revokedAt(t)).toBe(AT);
        expect(await revokedAt(p.alice1)).toBeNull();
      });

      it('by jti of an expired or revoked token changes nothing', async () => {
        const p = await population();
        expect(await revokeAll({ jti: p.expired.jti }, AT)).toBe(0);
        expect(await revokeAll({ jti: p.revoked.jti }, AT)).toBe(0);
        expect(await revokedAt(p.expired)).toBeNull();
        expect(await revokedAt(p.revoked)).toBe(T0 + MINUTE);
      });

      it('by user revokes the user’s active tokens at every client', async () => {
        const p = await population();
        expect(await revokeAll({ username: 'alice' }, AT)).toBe(4);
        for (const t of [p.aliceGrant.refresh, p.aliceGrant.access, p.alice1, p.alice2]) expect(await revokedAt(t)).toBe(AT);
        expect(await revokedAt(p.bob1)).toBeNull();
        expect(await revokedAt(p.expired)).toBeNull();
        expect(await revokedAt(p.revoked)).toBe(T0 + MINUTE);
        expect(await store.countRevocable({ username: 'alice' }, AT)).toBe(0);
        expect(await revokeAll({ username: 'alice' }, AT + 1)).toBe(0);
      });

      it('by user and client stays within that client', async () => {
        const p = await population();
        expect(await revokeAll({ username: 'alice', clientId: 'client-1' }, AT)).toBe(3);
        expect(await revokedAt(p.alice1)).toBe(AT);
        expect(await revokedAt(p.alice2)).toBeNull();
        expect(await revokedAt(p.bob1)).toBeNull();
      });

      it('by client revokes every user’s active tokens at that client', async () => {
        const p = await population();
        expect(await revokeAll({ clientId: 'client-1' }, AT)).toBe(4);
        for (const t of [p.aliceGrant.refresh, p.aliceGrant.access, p.alice1, p.bob1]) expect(await revokedAt(t)).toBe(AT);
        expect(await revokedAt(p.alice2)).toBeNull();
      });

      it('leaves expired tokens of a revoked grant alone, and counts exactly what it revokes', async () => {
        const g = grant({ username: 'carol' });
        const oldAccess = tok({ username: 'carol', grantId: g.refresh.grantId, expiresAt: T0 + MINUTE });
        await insert(g.refresh, g.access, oldAccess);
        expect(await store.countRevocable({ username: 'carol' }, AT)).toBe(2);
        expect(await revokeAll({ username: 'carol' }, AT)).toBe(2);
        expect(await revokedAt(oldAccess)).toBeNull();
      });

      it('by the jti of a refresh token: the count includes its grant’s live access tokens', async () => {
        const g = grant({ username: 'dave' });
        const second = tok({ username: 'dave', grantId: g.refresh.grantId });
        await insert(g.refresh, g.access, second);
        expect(await store.countRevocable({ jti: g.refresh.jti }, AT)).toBe(3);
        expect(await revokeAll({ jti: g.refresh.jti }, AT)).toBe(3);
        expect(await revokedAt(second)).toBe(AT);
        expect(await store.countRevocable({ jti: g.refresh.jti }, AT)).toBe(0);
      });
    });

    describe('rotateRefreshToken', () => {
      /** A refresh token and an access token that replace `of` in its grant. */
      const successor = (of: TokenRecord, issuedAt = T0 + MINUTE) => {
        const g = makeGrant({ clientId: of.clientId, grantId: of.grantId, username: of.username, issuedAt });
        return [g.refresh, g.access] as [TokenRecord, TokenRecord];
      };
      let r0: TokenRecord;
      let a0: TokenRecord;
      beforeEach(async () => {
        const g = grant();
        r0 = g.refresh;
        a0 = g.access;
        await insert(g.refresh, g.access);
      });

      it('replaces a current refresh token and stores the new tokens', async () => {
        const issued = successor(r0);
        expect(await store.rotateRefreshToken(r0.jti, issued, AT)).toBe('rotated');
        expect(await get(r0)).toEqual({ ...r0, replacedAt: AT, replacedBy: issued[0].jti });
        expect(tokenState((await get(r0))!, AT)).toBe('revoked');
        for (const t of issued) expect(await get(t)).toEqual(t);
      });

      it('conflicts on a token already replaced, and writes nothing', async () => {
        const first = successor(r0);
        await store.rotateRefreshToken(r0.jti, first, AT);
        const second = successor(r0);
        expect(await store.rotateRefreshToken(r0.jti, second, AT + 1)).toBe('conflict');
        for (const t of second) expect(await get(t)).toBeNull();
        expect(await get(r0)).toMatchObject({ replacedAt: AT, replacedBy: first[0].jti });
      });

      it('conflicts on a revoked or unknown token, and writes nothing', async () => {
        await store.revokeToken(r0.jti, T0 + 1, false, {});
        const issued = successor(r0);
        expect(await store.rotateRefreshToken(r0.jti, issued, AT)).toBe('conflict');
        expect(await store.rotateRefreshToken('00000000-0000-4000-8000-000000000000', issued, AT)).toBe('conflict');
        for (const t of issued) expect(await get(t)).toBeNull();
        expect(await get(r0)).toMatchObject({ replacedAt: null, replacedBy: null });
      });

      it('lets exactly one of ten concurrent rotations win', async () => {
        const attempts = Array.from({ length: 10 }, () => successor(r0));
        const outcomes = await Promise.all(attempts.map((issued) => store.rotateRefreshToken(r0.jti, issued, AT)));
        expect(outcomes.filter((o) => o === 'rotated')).toHaveLength(1);
        expect(outcomes.filter((o) => o === 'conflict')).toHaveLength(9);
        const winner = attempts[outcomes.indexOf('rotated')]!;
        expect((await get(r0))?.replacedBy).toBe(winner[0].jti);
        const stored = await Promise.all(attempts.flat().map(get));
        expect(stored.filter((t) => t !== null).map((t) => t!.jti).sort()).toEqual(winner.map((t) => t.jti).sort());
      });

      it('grace re-use leaves the old token’s own access tokens alone when its replacement was issued in the same millisecond', async () => {
        expect(a0.issuedAt).toBe(r0.issuedAt);
        const first = successor(r0, r0.issuedAt);
        expect(await store.rotateRefreshToken(r0.jti, first, AT)).toBe('rotated');
        const issued = successor(r0, AT + 1);
        expect(await store.rotateRefreshToken(r0.jti, issued, AT + 1, first[0].jti)).toBe('rotated');
        expect(await revokedAt(first[0])).toBe(AT + 1);
        // Not told apart from a0 by their instant: both stay (revoking a0 would end a good token).
        expect(await revokedAt(first[1])).toBeNull();
        expect(await revokedAt(a0)).toBeNull();
      });

      describe('with revokeJti (grace re-use of the previous token)', () => {
        let r1: TokenRecord;
        let a1: TokenRecord;
        beforeEach(async () => {
          const first = successor(r0);
          [r1, a1] = first;
          expect(await store.rotateRefreshToken(r0.jti, first, AT)).toBe('rotated');
        });

        it('supersedes the lost replacement (revoked, and replaced by the new token) and points the old token at the new one', async () => {
          const issued = successor(r0, AT + 1);
          expect(await store.rotateRefreshToken(r0.jti, issued, AT + 1, r1.jti)).toBe('rotated');
          // Replaced too, so that whoever presents it again is seen as reuse, not just refused.
          expect(await get(r1)).toEqual({ ...r1, revokedAt: AT + 1, replacedAt: AT + 1, replacedBy: issued[0].jti });
          // replacedAt keeps the first replacement, so the grace period cannot be stretched.
          expect(await get(r0)).toEqual({ ...r0, replacedAt: AT, replacedBy: issued[0].jti });
          for (const t of issued) expect(await get(t)).toEqual(t);
        });

        it('revokes the access token issued with the lost replacement, and no other', async () => {
          const [elsewhere] = await insert(tok({ issuedAt: a1.issuedAt })); // the same instant, another grant
          const issued = successor(r0, AT + 1);
          expect(await store.rotateRefreshToken(r0.jti, issued, AT + 1, r1.jti)).toBe('rotated');
          expect(await revokedAt(a1)).toBe(AT + 1);
          for (const t of [a0, elsewhere!, issued[1]]) expect(await revokedAt(t)).toBeNull();
        });

        const refused = async (revokeJti: string) => {
          const issued = successor(r0, AT + 2);
          expect(await store.rotateRefreshToken(r0.jti, issued, AT + 2, revokeJti)).toBe('conflict');
          for (const t of issued) expect(await get(t)).toBeNull();
        };

        it('conflicts when revokeJti is not the token’s replacement', async () => {
          const [bystander] = await insert(tok({ type: 'refresh_token' }));
          await refused(bystander!.jti);
          expect(await revokedAt(bystander!)).toBeNull();
          expect((await get(r0))?.replacedBy).toBe(r1.jti);
        });

        it('conflicts when the replacement was replaced in turn', async () => {
          const r2 = successor(r1, AT + 1);
          expect(await store.rotateRefreshToken(r1.jti, r2, AT + 1)).toBe('rotated');
          await refused(r1.jti);
          expect(await revokedAt(r1)).toBeNull();
        });

        it('conflicts when the replacement was revoked', async () => {
          await store.revokeToken(r1.jti, AT + 1, false, {});
          await refused(r1.jti);
          expect(await revokedAt(r1)).toBe(AT + 1);
        });

        it('conflicts when the old token was revoked', async () => {
          await store.revokeToken(r0.jti, AT + 1, false, {});
          await refused(r1.jti);
          expect(await revokedAt(r1)).toBeNull();
        });

        it('lets exactly one of ten concurrent grace rotations win', async () => {
          const attempts = Array.from({ length: 10 }, () => successor(r0, AT + 1));
          const outcomes = await Promise.all(attempts.map((issued) => store.rotateRefreshToken(r0.jti, issued, AT + 1, r1.jti)));
          expect(outcomes.filter((o) => o === 'rotated')).toHaveLength(1);
          const winner = attempts[outcomes.indexOf('rotated')]!;
          expect((await get(r0))?.replacedBy).toBe(winner[0].jti);
          expect((await Promise.all(attempts.flat().map(get))).filter((t) => t !== null)).toHaveLength(2);
        });
      });

      it('with revokeJti conflicts when the old token was never replaced', async () => {
        const [current] = await insert(tok({ type: 'refresh_token' }));
        const issued = successor(r0);
        expect(await store.rotateRefreshToken(r0.jti, issued, AT, current!.jti)).toBe('conflict');
        expect(await revokedAt(current!)).toBeNull();
        expect(await get(issued[0])).toBeNull();
      });
    });

    describe('purge', () => {
      const BEFORE = T0 + 2 * HOUR;
      async function setup() {
        const gone = [
          tok({ expiresAt: T0 + HOUR }),
          tok({ expiresAt: T0 + 24 * HOUR, revokedAt: T0 + 30 * MINUTE }),
          tok({ type: 'refresh_token', expiresAt: T0 + HOUR, replacedAt: T0, replacedBy: 'next' }),
        ];
        const kept = [
          tok({ expiresAt: BEFORE }), // expires exactly at the cut-off: not before it
          tok({ expiresAt: T0 + 24 * HOUR, revokedAt: BEFORE }),
          tok({ expiresAt: T0 + 24 * HOUR }),
          // Replaced but unexpired: kept, so that presenting it again is still detected as reuse.
          tok({ type: 'refresh_token', expiresAt: T0 + 24 * HOUR, replacedAt: T0 + 10 * MINUTE, replacedBy: 'next' }),
        ];
        await insert(...gone, ...kept);
        return { gone, kept };
      }

      it('counts what it would delete', async () => {
        await setup();
        expect(await store.countPurgeable(BEFORE)).toBe(3);
        expect(await store.countPurgeable(T0)).toBe(0);
      });

      it('deletes in batches until nothing is left, keeping the rest', async () => {
        const { gone, kept } = await setup();
        expect(await store.purgeBatch(BEFORE, 2, {})).toBe(2);
        expect(await store.countPurgeable(BEFORE)).toBe(1);
        expect(await store.purgeBatch(BEFORE, 2, {})).toBe(1);
        expect(await store.purgeBatch(BEFORE, 2, {})).toBe(0);
        for (const t of gone) {
          expect(await get(t)).toBeNull();
          expect(await store.findTokenByDigest(t.digest)).toBeNull();
        }
        for (const t of kept) expect(await get(t)).toEqual(t);
      });

      it('writes a batch’s audit entry in the batch, with the count it deleted, and none for an empty batch', async () => {
        await setup();
        const entry = { at: T0, actor: 'cli:op', action: 'purge', target: 'before:x', count: 0, detail: 'batch' };
        expect(await store.purgeBatch(BEFORE, 2, { audit: entry })).toBe(2);
        expect(await store.purgeBatch(BEFORE, 2, { audit: entry })).toBe(1);
        expect(await store.purgeBatch(BEFORE, 2, { audit: entry })).toBe(0);
        const trail = await store.listAudit({});
        expect(trail.map((e) => [e.action, e.count]).sort()).toEqual([
          ['purge', 1],
          ['purge', 2],
        ]);
      });

      it('the audit retention: the oldest lines before the cut-off go in batches, each telling of itself in its batch', async () => {
        for (const at of [T0, T0 + MINUTE, T0 + 2 * MINUTE, BEFORE, BEFORE + MINUTE]) {
          await store.appendAudit({ at, actor: 'cli:op', action: 'client.create', target: `client:c${at}`, count: 1, detail: '' });
        }
        expect(await store.countAuditBefore(BEFORE)).toBe(3);
        const entry = { at: BEFORE + HOUR, actor: 'cli:op', action: 'purge.audit', target: 'audit-before:x', count: 0, detail: 'batch' };
        expect(await store.purgeAuditBatch(BEFORE, 2, { audit: entry })).toBe(2);
        expect(await store.purgeAuditBatch(BEFORE, 2, { audit: entry })).toBe(1);
        expect(await store.purgeAuditBatch(BEFORE, 2, { audit: entry })).toBe(0);
        expect(await store.countAuditBefore(BEFORE)).toBe(0);
        const trail = await store.listAudit({});
        expect(trail.map((e) => [e.action, e.at, e.count]).sort()).toEqual([
          ['client.create', BEFORE, 1],
          ['client.create', BEFORE + MINUTE, 1],
          ['purge.audit', BEFORE + HOUR, 1],
          ['purge.audit', BEFORE + HOUR, 2],
        ]);
      });

      it('grant records: a store deletes none that still has a token', async () => {
        const { kept } = await setup();
        await store.purgeBatch(BEFORE, 100, {});
        let after: string | null = null;
        for (let i = 0; i < 100; i++) {
          const { next }: { next: string | null } = await store.purgeGrantsBatch(BEFORE, after, 2, {});
          if (next === null) break;
          after = next;
        }
        for (const t of kept) expect(await get(t)).toEqual(t);
      });
    });

    describe('stats', () => {
      it('counts clients, and tokens by type and state', async () => {
        const now = T0 + 2 * HOUR;
        await insert(
          tok(), // expired at now
          tok({ expiresAt: T0 + 3 * HOUR }),
          tok({ expiresAt: T0 + 3 * HOUR, revokedAt: T0 }),
          tok({ type: 'refresh_token', expiresAt: T0 + 24 * HOUR }),
          tok({ type: 'refresh_token', expiresAt: T0 + 24 * HOUR, replacedAt: T0, replacedBy: 'x' }),
          tok({ type: 'refresh_token', expiresAt: now }),
          tok({ type: 'refresh_token', expiresAt: T0 + 5 * MINUTE, revokedAt: T0 }), // the oldest expiry, though revoked
        );
        expect(await store.stats(now)).toEqual({
          clients: 2,
          tokens: {
            access_token: { active: 1, expired: 1, revoked: 1 },
            refresh_token: { active: 1, expired: 1, revoked: 2 },
          },
          oldestExpiredAt: T0 + 5 * MINUTE,
        });
      });

      it('with a client id, counts that client’s tokens only (clients stays the total)', async () => {
        const now = T0 + HOUR;
        await insert(
          tok({ expiresAt: T0 + 2 * HOUR }),
          tok({ expiresAt: T0 + 10 * MINUTE }),
          makeToken({ clientId: 'client-2', type: 'refresh_token', expiresAt: T0 + 2 * HOUR }),
          makeToken({ clientId: 'client-2', expiresAt: T0 + 5 * MINUTE, revokedAt: T0 }),
        );
        expect(await store.stats(now, 'client-2')).toEqual({
          clients: 2,
          tokens: { access_token: { active: 0, expired: 0, revoked: 1 }, refresh_token: { active: 1, expired: 0, revoked: 0 } },
          oldestExpiredAt: T0 + 5 * MINUTE,
        });
        expect((await store.stats(now, 'client-1')).tokens.access_token).toEqual({ active: 1, expired: 1, revoked: 0 });
        expect((await store.stats(now, 'client-1')).oldestExpiredAt).toBe(T0 + 10 * MINUTE);
        expect((await store.stats(now, 'nobody')).tokens.access_token).toEqual({ active: 0, expired: 0, revoked: 0 });
      });

      it('reports zeros and no expiry for a store without tokens', async () => {
        expect(await store.stats(T0)).toEqual({
          clients: 2,
          tokens: { access_token: { active: 0, expired: 0, revoked: 0 }, refresh_token: { active: 0, expired: 0, revoked: 0 } },
          oldestExpiredAt: null,
        });
      });
    });

    describe('audit', () => {
      const entry = (o: Partial<AuditEntry>): AuditEntry => ({ at: T0, actor: 'cli:root', action: 'token.revoke', target: 'x', count: 1, detail: '', ...o });
      const entries = [
        entry({ at: T0, actor: 'client-1', target: 'jti-1', detail: 'by the client' }),
        entry({ at: T0 + 1, action: 'token.revoke_bulk', target: 'client:client-1', count: 42 }),
        entry({ at: T0 + 2, action: 'token.revoke_bulk', target: 'user:alice', count: 3 }),
        entry({ at: T0 + 3, actor: 'client-2', target: 'jti-1' }),
      ];
      const fields = (list: AuditEntry[]) => list.map(({ id: _id, ...rest }) => rest);

      it('appends entries and lists them newest first, with ids', async () => {
        for (const e of entries) await store.appendAudit(e);
        const list = await store.listAudit({});
        expect(fields(list)).toEqual([...entries].reverse());
        const ids = list.map((e) => e.id);
        expect(ids.every((id) => typeof id === 'number')).toBe(true);
        expect([...ids].sort((a, b) => b! - a!)).toEqual(ids);
        expect(new Set(ids).size).toBe(4);
      });

      it('filters by time, jti and client, and limits', async () => {
        for (const e of entries) await store.appendAudit(e);
        expect(fields(await store.listAudit({ since: T0 + 2 }))).toEqual([entries[3], entries[2]]);
        expect(fields(await store.listAudit({ jti: 'jti-1' }))).toEqual([entries[3], entries[0]]);
        expect(fields(await store.listAudit({ clientId: 'client-1' }))).toEqual([entries[1], entries[0]]);
        expect(fields(await store.listAudit({ clientId: 'client-2', jti: 'jti-1' }))).toEqual([entries[3]]);
        expect(fields(await store.listAudit({ limit: 1 }))).toEqual([entries[3]]);
        expect(await store.listAudit({ since: T0 + 10 })).toEqual([]);
      });

      it('leaves out the actions asked, pages by id, and counts what matches on every page', async () => {
        for (const e of entries) await store.appendAudit(e);
        const hide = ['token.revoke_bulk'];
        expect(fields(await store.listAudit({ hideActions: hide }))).toEqual([entries[3], entries[0]]);
        expect(await store.countAudit({ hideActions: hide })).toBe(2);
        expect(await store.countAudit({})).toBe(4);
        expect(await store.countAudit({ clientId: 'client-1' })).toBe(2);
        const first = await store.listAudit({ limit: 3 });
        const next = await store.listAudit({ limit: 3, beforeId: first.at(-1)!.id });
        expect(fields(first)).toEqual([entries[3], entries[2], entries[1]]);
        expect(fields(next)).toEqual([entries[0]]);
        expect(await store.listAudit({ beforeId: next[0]!.id })).toEqual([]);
      });
    });

    describe('lifecycle', () => {
      it('describes itself', async () => {
        expect(typeof store.location).toBe('string');
        expect(store.location.length).toBeGreaterThan(0);
        const version = await store.schemaVersion();
        expect(Number.isInteger(version) && version >= 1).toBe(true);
      });

      it('answers ping while open, and nothing once closed', async () => {
        await expect(store.ping()).resolves.toBeUndefined();
        await store.close();
        await expect(store.ping()).rejects.toThrow();
        await expect(store.getClient('client-1')).rejects.toThrow();
        await expect(store.close()).resolves.toBeUndefined();
      });
    });
  });
}
