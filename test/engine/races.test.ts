import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import type { TokenRecord } from '../../src/store/store.js';
import { addClient, deferred, flush, introspected, issueFor, makeEngine, refreshAs, revokeAs, settle } from '../helpers/engine.js';

/**
 * A store whose next token read answers with what it read at once, but only when released: the
 * interleaving of a SQL store where another request commits between our read and our write.
 */
class HeldReadStore extends MemoryStore {
  private held: Promise<void> | null = null;

  /** Holds the next findTokenByDigest; returns the function that releases it. */
  holdNextRead(): () => void {
    const gate = deferred();
    this.held = gate.promise;
    return () => gate.resolve();
  }

  override async findTokenByDigest(digest: string): Promise<TokenRecord | null> {
    const snapshot = await super.findTokenByDigest(digest);
    const held = this.held;
    this.held = null;
    if (held) await held;
    return snapshot;
  }
}

async function setup(rotateRefreshTokens: boolean) {
  const env = makeEngine({ store: new HeldReadStore(), rotateRefreshTokens });
  const client = await addClient(env.store);
  const issued = await issueFor(env.engine, client);
  return { ...env, client, issued };
}

describe('a refresh racing a revocation of its grant', () => {
  for (const rotate of [false, true]) {
    it(`${rotate ? 'with' : 'without'} rotation: the refresh that read the token before the revocation issues nothing active`, async () => {
      const { engine, store, client, issued } = await setup(rotate);
      const release = store.holdNextRead();
      const refreshing = settle(refreshAs(engine, { client, refreshToken: issued.refresh_token }));
      await flush(); // the refresh has read the refresh token as active and waits
      expect((await revokeAs(engine, { client, token: issued.refresh_token })).result.code).toBe('token_revoke_success');
      release();
      const outcome = await refreshing;
      if (outcome.ok) {
        // Had it succeeded, its tokens would have to be dead already: revocation ends the grant.
        expect(await introspected(engine, outcome.value.access_token)).toEqual({ active: false });
      } else {
        expect(outcome.error).toMatchObject({ code: 'invalid_token', reason: 'revoked' });
      }
      const live = await engine.listTokens({ state: 'active' });
      expect(live).toEqual([]);
    });
  }

  it('a refresh racing the deletion of its client leaves no active token behind', async () => {
    const { engine, store, client, issued } = await setup(false);
    const release = store.holdNextRead();
    const refreshing = settle(refreshAs(engine, { client, refreshToken: issued.refresh_token }));
    await flush();
    await engine.deleteClient(client.id, 'cli:op');
    release();
    const outcome = await refreshing;
    expect(outcome.ok).toBe(false);
    expect(await engine.listTokens({ state: 'active' })).toEqual([]);
  });
});

describe('rotation: concurrent refreshes of one token on a store with real interleaving', () => {
  it('one that read before the winner committed is refused by the conditional rotation: not reuse', async () => {
    const { engine, store, client, issued } = await setup(true);
    const release = store.holdNextRead();
    const late = settle(refreshAs(engine, { client, refreshToken: issued.refresh_token }));
    await flush(); // it has read the token as current and waits
    const winner = await refreshAs(engine, { client, refreshToken: issued.refresh_token });
    release();
    const outcome = await late;
    expect(outcome.ok).toBe(false);
    if (!outcome.ok) expect(outcome.error).toMatchObject({ reason: 'replaced' });
    expect(await introspected(engine, winner.refresh_token)).toMatchObject({ active: true });
    expect(await introspected(engine, winner.access_token)).toMatchObject({ active: true });
    expect(await engine.audit({})).toEqual([]);
  });

  // One that reads after the winner committed presents a replaced token: a lost race as well
  // within the rotation race window, reuse after it (see rotation.test.ts).
});
