import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/store.js';
import type { AuditEntry, RevocationEvent, TokenRecord } from '../../src/store/store.js';
import { PG_URL, dropSchema, testSchemaName, withPg } from '../helpers/pg.js';
import { HOUR, T0, makeClient, makeGrant, makeToken } from '../helpers/records.js';
import { makePollReceiver, makePushReceiver } from './events-contract.js';

/*
 * What the PostgreSQL store does for speed (docs/scale-out.md), beyond the contract suite: calls of
 * one event-loop turn share a statement, revocations are HOT updates (no index on revoked_at),
 * purge and bulk revocation resume where they stopped.
 */

/** The store's own pool, to count its statements. */
const poolOf = (store: PostgresStore) => (store as unknown as { db: { pool: Pool } }).db.pool;
const audit = (jti: string): AuditEntry => ({ at: T0, actor: 'client-1', action: 'token.revoke', target: jti, count: 1, detail: '' });

describe.skipIf(!PG_URL)('PostgresStore batching and revocation layout', () => {
  const url = PG_URL ?? '';
  let cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.reverse()) await c();
    cleanups = [];
  });
  const open = async (observer?: { commitBatch: (n: number) => void }) => {
    const schema = testSchemaName();
    cleanups.push(() => dropSchema(url, schema));
    const store = await PostgresStore.open(url, { schema, observer });
    cleanups.push(() => store.close());
    await store.createClient(makeClient({ id: 'client-1' }), {});
    await store.createClient(makeClient({ id: 'client-2', name: 'two' }), {});
    return { store, schema };
  };

  it('answers the reads of one event-loop turn with one statement, each caller its own pair', async () => {
    const { store } = await open();
    const tokens = Array.from({ length: 30 }, (_, k) => makeToken({ clientId: k % 2 ? 'client-2' : 'client-1' }));
    await store.insertTokens(tokens);
    const query = vi.spyOn(poolOf(store), 'query');
    const asks = [
      ...tokens.map((t, k) => ({ clientId: k % 3 ? t.clientId : 'nobody', digest: t.digest })),
      { clientId: 'client-2', digest: null },
      { clientId: 'client-1', digest: 'no-such-digest' },
    ];
    const answers = await Promise.all(asks.map((a) => store.findClientAndToken(a.clientId, a.digest)));
    expect(query).toHaveBeenCalledTimes(1);
    answers.forEach((answer, k) => {
      const ask = asks[k]!;
      expect(answer.client?.id ?? null).toBe(ask.clientId === 'nobody' ? null : ask.clientId);
      expect(answer.token?.jti ?? null).toBe(k < tokens.length ? tokens[k]!.jti : null);
    });
    expect(answers[0]!.token).toEqual(tokens[0]);
  });

  it('commits the revocations of one turn together, in one transaction: each jti revoked once, its audit line once, every caller answered', async () => {
    const sizes: number[] = [];
    const { store, schema } = await open({ commitBatch: (n) => sizes.push(n) });
    const tokens = Array.from({ length: 20 }, () => makeToken());
    const already = makeToken({ revokedAt: T0 - 1 });
    await store.insertTokens([...tokens, already]);
    const query = vi.spyOn(poolOf(store), 'query');
    const connect = vi.spyOn(poolOf(store), 'connect');
    // Every token twice, and one revoked before: only the first call for each unrevoked jti wins.
    const calls = [...tokens, ...tokens, already].map((t) => store.revokeToken(t.jti, T0, false, { audit: audit(t.jti) }));
    const answers = await Promise.all(calls);
    // One transaction for the turn (it may write the outbox: writes.ts `revoking`).
    expect(connect).toHaveBeenCalledTimes(1);
    expect(query).not.toHaveBeenCalled();
    expect(sizes).toEqual([41]);
    expect(answers.slice(0, 20)).toEqual(Array(20).fill(true));
    expect(answers.slice(20)).toEqual(Array(21).fill(false));
    for (const t of tokens) expect((await store.findTokenByJti(t.jti))?.revokedAt).toBe(T0);
    expect((await store.findTokenByJti(already.jti))?.revokedAt).toBe(T0 - 1);
    const lines = await withPg(url, schema, async (db) => (await db.query<{ target: string }>('SELECT target FROM audit ORDER BY id')).rows);
    expect(lines.map((l) => l.target).sort()).toEqual(tokens.map((t) => t.jti).sort());
  });

  it('writes the events of the revocations of one turn in their one transaction: one per revocation that won, for every receiver', async () => {
    const { store } = await open();
    await store.createReceiver(makePushReceiver('push-1'), {});
    await store.createReceiver(makePollReceiver('poll-1', 'client-1'), {});
    const tokens = Array.from({ length: 12 }, () => makeToken());
    const already = makeToken({ revokedAt: T0 - 1 });
    await store.insertTokens([...tokens, already]);
    const event = (t: TokenRecord): RevocationEvent => ({ id: randomUUID(), at: T0, reason: 'revoked', scope: 'token', jti: t.jti, clientId: t.clientId });
    const query = vi.spyOn(poolOf(store), 'query');
    const connect = vi.spyOn(poolOf(store), 'connect');
    // Every token twice (the second call loses, and its event is not written), one revoked before, some with audit lines.
    const calls = [...tokens, ...tokens, already].map((t, k) => ({ t, e: event(t), audit: k % 2 ? audit(t.jti) : undefined }));
    const answers = await Promise.all(calls.map((c) => store.revokeToken(c.t.jti, T0, false, { audit: c.audit, event: c.e })));
    // One transaction for the turn (it may write the outbox: writes.ts `revoking`).
    expect(connect).toHaveBeenCalledTimes(1);
    expect(query).not.toHaveBeenCalled();
    expect(answers).toEqual([...Array<boolean>(12).fill(true), ...Array<boolean>(13).fill(false)]);
    const written = calls.slice(0, 12).map((c) => c.e.id).sort();
    for (const receiver of ['push-1', 'poll-1']) {
      expect((await store.pendingDeliveries(receiver, 100)).flatMap((d) => d.events.map((e) => e.id)).sort()).toEqual(written);
    }
    expect((await store.pendingDeliveries('poll-1', 100)).flatMap((d) => d.events).find((e) => e.id === calls[0]!.e.id)).toEqual(calls[0]!.e);
  });

  it('retries a failed batch one by one, so that a failing revocation fails alone', async () => {
    const { store } = await open();
    const tokens = Array.from({ length: 5 }, () => makeToken());
    await store.insertTokens(tokens);
    // A count PostgreSQL refuses (not a bigint) fails the batch's statement, and then that call alone.
    const bad = { ...audit(tokens[2]!.jti), count: Number.NaN };
    const outcomes = await Promise.allSettled(tokens.map((t, k) => store.revokeToken(t.jti, T0, false, { audit: k === 2 ? bad : audit(t.jti) })));
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    expect(outcomes.filter((o) => o.status === 'fulfilled').map((o) => o.value)).toEqual([true, true, true, true]);
    expect((await store.findTokenByJti(tokens[2]!.jti))?.revokedAt).toBeNull();
    expect((await store.findTokenByJti(tokens[3]!.jti))?.revokedAt).toBe(T0);
  });

  it('commits the mints of one turn in one statement, each with its own outcome, and a failing one alone', async () => {
    const { store } = await open();
    const grants = Array.from({ length: 6 }, () => makeGrant());
    await store.insertTokens(grants.map((g) => g.refresh));
    await store.revokeGrant(grants[1]!.refresh.grantId, T0, {});
    const query = vi.spyOn(poolOf(store), 'query');
    const mint = (k: number, access = makeToken({ grantId: grants[k]!.refresh.grantId })) => store.insertMintedAccess(access, grants[k]!.refresh.jti);
    const outcomes = await Promise.all([mint(0), mint(1), mint(2), store.insertMintedAccess(makeToken({ grantId: grants[3]!.refresh.grantId }), 'no-such-refresh')]);
    expect(outcomes).toEqual(['inserted', 'revoked', 'inserted', 'unknown']);
    expect(query).toHaveBeenCalledTimes(1); // one statement for the four
    // An access token whose jti exists already fails the batch's statement, then alone.
    const taken = makeToken({ jti: grants[0]!.refresh.jti, grantId: grants[4]!.refresh.grantId });
    const settled = await Promise.allSettled([mint(4, taken), mint(5)]);
    expect(settled.map((o) => o.status)).toEqual(['rejected', 'fulfilled']);
    expect((settled[1] as PromiseFulfilledResult<string>).value).toBe('inserted');
  });

  it('counts the mints of one grant in the same statement against its limit, in their order', async () => {
    const { store } = await open();
    const [a, b] = [makeGrant(), makeGrant()];
    await store.insertTokens([a!.refresh, b!.refresh, makeToken({ grantId: a!.refresh.grantId, issuedAt: T0 + 10 })]);
    const limit = { since: T0, max: 3 };
    const query = vi.spyOn(poolOf(store), 'query');
    // Grant a: 1 token issued since T0 (its refresh token was issued at T0, not after), limit 3: two more fit.
    const mints = [a, b, a, a, b, a].map((g) => store.insertMintedAccess(makeToken({ grantId: g!.refresh.grantId, issuedAt: T0 + 20 }), g!.refresh.jti, limit));
    expect(await Promise.all(mints)).toEqual(['inserted', 'inserted', 'inserted', 'limited', 'inserted', 'limited']);
    expect(query).toHaveBeenCalledTimes(1);
    expect(await store.countTokens({ clientId: 'client-1' })).toBe(3 + 4);
  });

  it('keeps revoked_at out of every index and leaves room on each page, so that a revocation is a HOT update', async () => {
    const { schema } = await open();
    const { indexes, options } = await withPg(url, undefined, async (db) => ({
      indexes: (await db.query<{ def: string }>('SELECT indexdef AS def FROM pg_indexes WHERE schemaname = $1', [schema])).rows.map((r) => r.def),
      options: (
        await db.query<{ name: string; options: string[] | null }>(
          `SELECT c.relname AS name, c.reloptions AS options FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = $1 AND c.relname IN ('tokens', 'grants') ORDER BY 1`,
          [schema],
        )
      ).rows,
    }));
    expect(indexes.filter((d) => / ON "?[a-z_0-9]+"?\.(tokens|grants) /.test(d) && /revoked_at/.test(d))).toEqual([]);
    expect(options).toEqual([
      { name: 'grants', options: ['fillfactor=50'] },
      { name: 'tokens', options: ['fillfactor=50'] },
    ]);
  });

  it('inserts tokens without a lock on their client’s row (no foreign key from tokens), and still deletes them with their client', async () => {
    const { store, schema } = await open();
    const keys = await withPg(url, undefined, async (db) =>
      (
        await db.query<{ name: string; target: string }>(
          `SELECT c.conname AS name, c.confrelid::regclass::text AS target FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
            WHERE n.nspname = $1 AND c.contype = 'f' AND c.conrelid = $2::regclass`,
          [schema, `"${schema}".tokens`],
        )
      ).rows,
    );
    expect(keys).toEqual([]);
    const g = makeGrant({ clientId: 'client-2' });
    const other = makeGrant({ clientId: 'client-1' });
    await store.insertTokens([g.refresh, g.access, other.refresh]);
    expect(await store.deleteClient('client-2', {})).toBe(true);
    expect(await store.findTokenByJti(g.refresh.jti)).toBeNull();
    expect(await store.findTokenByJti(g.access.jti)).toBeNull();
    expect(await store.findTokenByJti(other.refresh.jti)).not.toBeNull();
    // Nothing can be minted in a grant of the deleted client.
    expect(await store.insertMintedAccess(makeToken({ clientId: 'client-2', grantId: g.refresh.grantId }), g.refresh.jti)).toBe('unknown');
  });

  it('purges revoked tokens in batches that go on where the last stopped, and answers 0 only when none is left', async () => {
    const { store } = await open();
    const live = Array.from({ length: 30 }, () => makeToken({ expiresAt: T0 + 10 * HOUR }));
    const revoked = Array.from({ length: 25 }, () => makeToken({ expiresAt: T0 + 10 * HOUR, revokedAt: T0 }));
    const expired = Array.from({ length: 7 }, () => makeToken({ expiresAt: T0 }));
    const mixed: TokenRecord[] = [];
    for (let k = 0; k < 30; k++) mixed.push(...[live[k], revoked[k], expired[k]].filter((t): t is TokenRecord => t !== undefined));
    await store.insertTokens(mixed);
    const before = T0 + 1;
    expect(await store.countPurgeable(before)).toBe(32);
    const batches: number[] = [];
    for (let n = -1; n !== 0; ) {
      n = await store.purgeBatch(before, 4, {});
      batches.push(n);
    }
    expect(batches.reduce((a, b) => a + b, 0)).toBe(32);
    expect(batches.slice(0, -1).every((n) => n > 0 && n <= 4)).toBe(true);
    expect(await store.countPurgeable(before)).toBe(0);
    for (const t of live) expect(await store.findTokenByJti(t.jti)).not.toBeNull();
    // Revoked behind the scan's position: found by the scan from the first page, before any 0.
    await store.revokeToken(live[0]!.jti, T0, false, {});
    expect(await store.purgeBatch(before, 4, {})).toBe(1);
    expect(await store.purgeBatch(before, 4, {})).toBe(0);
  });

  it('revokes a user in steps of at most `limit` rows: tokens, then grants, then tokens again, and finds a grant created meanwhile', async () => {
    const { store } = await open();
    const grants = Array.from({ length: 9 }, (_, k) => makeGrant({ grantId: `g-${k}`, username: 'mass' }));
    await store.insertTokens(grants.flatMap((g) => [g.refresh, g.access]));
    const first = await store.revokeBulk({ username: 'mass' }, T0, 4, undefined, {});
    expect(first).toEqual({ revoked: 4, more: true, resume: expect.any(String) as string });
    // A grant created behind every cursor while the revocation runs.
    const late = makeGrant({ grantId: 'g-0a', username: 'mass' });
    await store.insertTokens([late.refresh, late.access]);
    const steps = [first.revoked];
    let resume = first.resume;
    for (let more = true, n = 0; more && n < 20; n++) {
      const batch = await store.revokeBulk({ username: 'mass' }, T0, 4, resume, {});
      steps.push(batch.revoked);
      more = batch.more;
      resume = batch.resume;
    }
    expect(steps.reduce((a, b) => a + b, 0)).toBe(20);
    // A step ends once it has written `limit` rows of one kind: a call may finish one phase and start the next.
    expect(Math.max(...steps)).toBeLessThan(8);
    // 20 tokens in steps of 4: at least 5 sweeps (the grant batches run beside them).
    expect(steps.length).toBeGreaterThanOrEqual(5);
    expect((await store.findTokenByJti(late.access.jti))?.revokedAt).toBe(T0);
    expect(await store.countRevocable({ username: 'mass' }, T0)).toBe(0);
    // Every grant is revoked too: none mints again.
    for (const g of [...grants, late]) expect(await store.insertMintedAccess(makeToken({ grantId: g.refresh.grantId, username: 'mass' }), g.refresh.jti)).not.toBe('inserted');
  });
});
