import { describe, expect, it, vi } from 'vitest';
import { addClient, DAY, HOUR, introspected, issueFor, makeEngine, refreshAs, revokeAs, START } from '../helpers/engine.js';

/**
 * Timeline (from START):
 *   grant a: access expires +1h, refresh +2h.
 *   grant b: access expires +1h, refresh +30d but revoked at +1d.
 *   grant c: issued at +1d; access expires +1d1h, refresh +31d.
 * Then the clock is at +10d.
 */
async function timeline() {
  const env = makeEngine();
  const client = await addClient(env.store);
  const a = await issueFor(env.engine, client, { username: 'a', refreshTtlMs: 2 * HOUR });
  const b = await issueFor(env.engine, client, { username: 'b' });
  env.clock.advance(DAY);
  await revokeAs(env.engine, { client, token: b.refresh_token });
  const c = await issueFor(env.engine, client, { username: 'c' });
  env.clock.set(START + 10 * DAY);
  return { ...env, client, a, b, c };
}

async function remaining(engine: Awaited<ReturnType<typeof timeline>>['engine']): Promise<string[]> {
  return (await engine.listTokens({})).map((t) => `${t.username}:${t.type}`).sort();
}

describe('purge', () => {
  it('deletes with the cut-off it planned (and the operator confirmed), not a later one', async () => {
    const { engine, clock } = await timeline();
    // At +10d with older-than 9d: a's tokens (expired by +2h) qualify; b's revoked refresh token (+1d) does not yet.
    const plan = await engine.planPurge(9 * DAY);
    expect(plan).toEqual({ before: START + DAY, purgeable: 3 });
    clock.advance(2 * HOUR); // the operator reads the prompt; b's revocation and c's access token pass the mark meanwhile
    expect(await engine.countPurgeable(9 * DAY)).toBe(5);
    const result = await engine.purge({ olderThanMs: 9 * DAY, before: plan.before }, 'cli:op');
    expect(result).toMatchObject({ deleted: 3, before: plan.before });
    expect(await remaining(engine)).toEqual(expect.arrayContaining(['b:refresh_token', 'c:access_token']));
  });

  it("goes by each token's own expiry or revocation time", async () => {
    const { engine } = await timeline();
    // before = +12h: a's two tokens and b's access token expired earlier; b's refresh token was revoked later.
    expect(await engine.countPurgeable(9 * DAY + 12 * HOUR)).toBe(3);
    const result = await engine.purge({ olderThanMs: 9 * DAY + 12 * HOUR }, 'cli:op');
    expect(result.deleted).toBe(3);
    expect(result.before).toBe(START + 12 * HOUR);
    expect(await remaining(engine)).toEqual(['b:refresh_token', 'c:access_token', 'c:refresh_token']);
  });

  it('a token revoked long enough ago goes even though it has not expired', async () => {
    const { engine } = await timeline();
    // before = +3d: b's refresh token (revoked +1d, expires +30d) goes, so does c's access token (expired +1d1h).
    const result = await engine.purge({ olderThanMs: 7 * DAY }, 'cli:op');
    expect(result.deleted).toBe(5);
    expect(await remaining(engine)).toEqual(['c:refresh_token']);
  });

  it('never deletes an active token', async () => {
    const { engine, c } = await timeline();
    await engine.purge({ olderThanMs: 0 }, 'cli:op');
    expect(await introspected(engine, c.refresh_token)).toMatchObject({ active: true });
    expect(await remaining(engine)).toEqual(['c:refresh_token']);
  });

  it('works in batches until a short batch, reporting progress, with an audit entry per batch', async () => {
    const { engine, store } = await timeline();
    const batches = vi.spyOn(store, 'purgeBatch');
    const progress: number[] = [];
    const result = await engine.purge({ olderThanMs: 7 * DAY, batchSize: 2, onProgress: (n) => progress.push(n) }, 'cli:op');
    expect(result).toMatchObject({ deleted: 5, interrupted: false });
    expect(batches.mock.calls.map((call) => call[1])).toEqual([2, 2, 2]);
    expect(progress).toEqual([2, 4, 5]);
    const [summary, ...entries] = (await engine.audit({})).filter((e) => e.action.startsWith('purge'));
    expect(summary).toMatchObject({ actor: 'cli:op', action: 'purge', count: 5, detail: '3 batches' });
    expect(entries.map((e) => e.count).sort()).toEqual([1, 2, 2]);
    for (const e of [summary!, ...entries]) {
      expect(e).toMatchObject({ actor: 'cli:op', action: e === summary ? 'purge' : 'purge.batch' });
      expect(e.target).toContain(new Date(START + 3 * DAY).toISOString());
    }
  });

  it('an abort stops at a batch boundary: exactly what was deleted is returned and audited', async () => {
    const { engine } = await timeline();
    const controller = new AbortController();
    const result = await engine.purge(
      { olderThanMs: 7 * DAY, batchSize: 2, planned: 5, signal: controller.signal, onProgress: (n) => n >= 2 && controller.abort() },
      'cli:op',
    );
    expect(result).toMatchObject({ deleted: 2, interrupted: true });
    expect(await engine.countPurgeable(7 * DAY)).toBe(3);
    const entries = await engine.audit({});
    expect(entries.filter((e) => e.action === 'purge.batch').map((e) => e.count)).toEqual([2]);
    expect(entries.find((e) => e.action === 'purge.interrupted')).toMatchObject({ count: 2, detail: 'interrupted: 2 of 5 deleted' });
    expect(entries.some((e) => e.action === 'purge')).toBe(false); // the interrupted line is its summary
  });

  it('a number of tokens that fills the last batch exactly takes one more, empty, call', async () => {
    const { engine, store } = await timeline();
    const batches = vi.spyOn(store, 'purgeBatch');
    const progress: number[] = [];
    const result = await engine.purge({ olderThanMs: 7 * DAY, batchSize: 5, onProgress: (n) => progress.push(n) }, 'cli:op');
    expect(result.deleted).toBe(5);
    expect(batches).toHaveBeenCalledTimes(2);
    expect(progress).toEqual([5]);
    expect(await engine.purge({ olderThanMs: 7 * DAY }, 'cli:op')).toMatchObject({ deleted: 0 });
  });

  it('keeps a replaced refresh token until it expires, so that its reuse is still detected', async () => {
    const env = makeEngine({ rotateRefreshTokens: true });
    const client = await addClient(env.store);
    const issued = await issueFor(env.engine, client);
    const next = await refreshAs(env.engine, { client, refreshToken: issued.refresh_token });
    env.clock.advance(2 * HOUR); // the first access token has expired
    expect((await env.engine.purge({ olderThanMs: 0 }, 'cli:op')).deleted).toBe(2); // both access tokens
    await expect(refreshAs(env.engine, { client, refreshToken: issued.refresh_token })).rejects.toMatchObject({ reason: 'revoked' });
    expect(await introspected(env.engine, next.refresh_token)).toEqual({ active: false });
  });
});

describe('purge: the audit retention', () => {
  it('without one, keeps every audit line; with one, deletes those older, and says so in the trail', async () => {
    const { engine, store, clock } = await timeline();
    for (const at of [START, START + HOUR]) await store.appendAudit({ at, actor: 'cli:op', action: 'client.create', target: 'client:x', count: 1, detail: '' });
    const before = await store.listAudit({});
    expect(before.filter((e) => e.at < START + 12 * HOUR)).toHaveLength(2); // and the revocation's, at START + 1d
    const kept = await engine.purge({ olderThanMs: 0 }, 'cli:op');
    expect(kept).toMatchObject({ audit_deleted: 0, audit_before: null });
    expect((await store.listAudit({})).filter((e) => e.at <= START + DAY)).toHaveLength(before.length);

    // A retention of 9.5 days at +10d: what was written at START goes, what was written at +1d stays.
    expect(await engine.countAuditOlderThan(9 * DAY + 12 * HOUR)).toBe(before.filter((e) => e.at < START + 12 * HOUR).length);
    const r = await engine.purge({ olderThanMs: 0, auditOlderThanMs: 9 * DAY + 12 * HOUR }, 'cli:op');
    expect(r.audit_before).toBe(clock.now() - (9 * DAY + 12 * HOUR));
    expect(r.audit_deleted).toBe(2);
    const after = await store.listAudit({});
    expect(after.some((e) => e.at < r.audit_before!)).toBe(false);
    expect(after.some((e) => e.at === START + DAY)).toBe(true);
    expect(after.filter((e) => e.action === 'purge.audit').map((e) => e.count)).toEqual([r.audit_deleted]);
  });
});
