import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROTATION_RACE_WINDOW_MS } from '../../src/engine/context.js';
import { tokenctl } from '../helpers/cli.js';
import { activeOf, defaultIsolationOf, inWaves, introspectAt, post, storeIsolationOf, refreshAt, revokeAt, roundsOf, startCluster, Tally, type Backend, type Cluster } from './cluster.js';

/*
 * Counters are added to only after an await has resolved (`const n = await …; count += n`):
 * `count += await …` reads `count` before the await, so concurrent rounds would lose each other's
 * additions and under-count the survivors (eslint: require-atomic-updates).
 */

/**
 * Contract 3, "a revocation is final", raced for real: three `serve` processes on one store, the
 * test process beside them with its own connection, and (for `revoke --user`) the real CLI. Each
 * race counts the outcomes the contract forbids and asserts there are none:
 * - a token active after a revocation covering it was acknowledged (HTTP 200 token_revoke_success,
 *   or a bulk revocation or client deletion that returned);
 * - a grant with a live token after reuse detection answered its 401;
 * - a rotation race that did not have exactly one winner, or whose winner's tokens are dead;
 * - an HTTP 500 (or a failed request), at READ COMMITTED and at SERIALIZABLE.
 *
 * Rounds: TOKENCTL_RACE_ROUNDS per race (default below; the README's soak run sets 1000).
 */
const ROUNDS = roundsOf(150);
const WAVE = 25;
const NODES = 3;

function line(what: string, figures: Record<string, number | string>): void {
  console.log(`[race ${what}] ${Object.entries(figures).map(([k, v]) => `${k}=${v}`).join(' ')}`);
}

export function describeRevocationIsFinal(backend: Backend, pgUrl: string | undefined): void {
  describe(`a revocation is final: ${NODES} serve nodes on one ${backend} store`, { timeout: 600_000 }, () => {
    describe('without rotation', () => {
      let c: Cluster;
      beforeAll(async () => {
        c = await startCluster(backend, { nodes: NODES, rotate: false, pgUrl });
      }, 120_000);
      afterAll(async () => c?.close());

      if (backend === 'postgres-serializable') {
        it('really runs at SERIALIZABLE', async () => {
          expect(await defaultIsolationOf(c, pgUrl!)).toBe('serializable');
          expect(await storeIsolationOf(c)).toBe('serializable');
        });
      }
      if (backend === 'postgres-repeatable-read') {
        it('on a database whose default is REPEATABLE READ, every transaction runs at READ COMMITTED', async () => {
          expect(await defaultIsolationOf(c, pgUrl!)).toBe('repeatable read');
          expect(await storeIsolationOf(c)).toBe('read committed');
        });
      }

      it(`a refresh token revoked on one node while two others refresh it: nothing of the grant active after token_revoke_success (${ROUNDS} races)`, async () => {
        const tally = new Tally();
        let acknowledged = 0;
        let minted = 0;
        let survivors = 0;
        await inWaves(ROUNDS, WAVE, async (i) => {
          const user = `revoke-${i}`;
          const g = await c.engine.issue({ clientId: c.clientId, username: user });
          const [revocation, ...refreshes] = await Promise.all(
            [revokeAt(c, i, g.refresh_token), refreshAt(c, i + 1, g.refresh_token), refreshAt(c, i + 2, g.refresh_token)].map((p) => p.then((r) => tally.add(r))),
          );
          if (revocation!.body.code !== 'token_revoke_success') return;
          acknowledged++;
          const active = await activeOf(c, user);
          survivors += active;
          for (const r of refreshes) {
            if (r.status !== 200) continue;
            minted++;
            if ((await introspectAt(c, i, r.body.access_token as string)).body.active !== false) survivors++;
          }
        });
        line(`${backend} revoke/refresh`, { rounds: ROUNDS, acknowledged, minted_in_race: minted, survivors, statuses: tally.toString() });
        expect(tally.count(500) + tally.count(0)).toBe(0);
        expect(acknowledged + tally.count(503)).toBeGreaterThanOrEqual(ROUNDS);
        expect(survivors).toBe(0);
      });

      it(`a bulk revocation of a user while the nodes refresh the user's grants: nothing active once it returned (${ROUNDS} races, half of them one row a step)`, async () => {
        const tally = new Tally();
        let survivorsAtAck = 0;
        let survivors = 0;
        let revoked = 0;
        await inWaves(ROUNDS, WAVE, async (i) => {
          const user = `bulk-${i}`;
          const grants = [await c.engine.issue({ clientId: c.clientId, username: user }), await c.engine.issue({ clientId: c.clientId, username: user })];
          const refreshing = Promise.all(grants.flatMap((g, k) => [refreshAt(c, i + k, g.refresh_token), refreshAt(c, i + k + 1, g.refresh_token)]).map((p) => p.then((r) => tally.add(r))));
          // One row a step in odd rounds: every phase of the store's bulk revocation, and each
          // boundary between two of its transactions, races the refreshes.
          const done = await c.engine.revokeBulk({ username: user }, 'cli:race', i % 2 === 1 ? { batchSize: 1 } : {});
          revoked += done.revoked;
          const activeAtAck = await activeOf(c, user); // nothing of the user active once it returned
          survivorsAtAck += activeAtAck;
          await refreshing;
          const activeAfter = await activeOf(c, user); // and nothing minted since, by a refresh that began before it
          survivors += activeAfter;
        });
        line(`${backend} bulk/refresh`, { rounds: ROUNDS, revoked, survivors_at_ack: survivorsAtAck, survivors, statuses: tally.toString() });
        expect(tally.count(500) + tally.count(0)).toBe(0);
        expect(revoked).toBeGreaterThanOrEqual(ROUNDS * 4);
        expect(survivorsAtAck).toBe(0);
        expect(survivors).toBe(0);
      });

      it(`revoke --jti of a refresh token while the nodes refresh it: nothing of its grant active once it returned (${Math.round(ROUNDS / 3)} races)`, async () => {
        const rounds = Math.round(ROUNDS / 3);
        const tally = new Tally();
        let survivors = 0;
        let revoked = 0;
        await inWaves(rounds, WAVE, async (i) => {
          const user = `jti-${i}`;
          const g = await c.engine.issue({ clientId: c.clientId, username: user });
          const jti = (await c.store.listTokens({ username: user, type: 'refresh_token' }))[0]!.jti;
          const refreshing = Promise.all([refreshAt(c, i, g.refresh_token), refreshAt(c, i + 1, g.refresh_token)].map((p) => p.then((r) => tally.add(r))));
          const revokedNow = (await c.engine.revokeBulk({ jti }, 'cli:race')).revoked;
          revoked += revokedNow;
          const atAck = await activeOf(c, user);
          for (const r of await refreshing) {
            if (r.status === 200 && (await introspectAt(c, i, r.body.access_token as string)).body.active !== false) survivors++;
          }
          const activeNow = atAck + (await activeOf(c, user));
          survivors += activeNow;
        });
        line(`${backend} jti/refresh`, { rounds, revoked, survivors, statuses: tally.toString() });
        expect(tally.count(500) + tally.count(0)).toBe(0);
        expect(revoked).toBeGreaterThanOrEqual(rounds * 2);
        expect(survivors).toBe(0);
      });

      it('`tokenctl revoke --user NAME --yes` (the real CLI) while the nodes refresh: nothing active once it exited 0', async () => {
        const rounds = Math.max(10, Math.round(ROUNDS / 10));
        const tally = new Tally();
        let survivors = 0;
        let exited0 = 0;
        await inWaves(rounds, 5, async (i) => {
          const user = `cli-${i}`;
          const grants = [await c.engine.issue({ clientId: c.clientId, username: user }), await c.engine.issue({ clientId: c.clientId, username: user })];
          let stop = false;
          // Refreshes keep coming for as long as the command runs, on every node.
          const refreshing = (async () => {
            for (let k = 0; !stop && k < 200; k++) await Promise.all(grants.map((g, j) => refreshAt(c, k + j, g.refresh_token).then((r) => tally.add(r))));
          })();
          const cli = await tokenctl(['revoke', '--user', user, '--yes', '--json', '--db', c.db], { timeoutMs: 60_000 });
          expect(cli.code, cli.stderr).toBe(0);
          exited0++;
          const atExit = await activeOf(c, user);
          stop = true;
          await refreshing;
          const activeNow = atExit + (await activeOf(c, user));
          survivors += activeNow;
        });
        line(`${backend} cli-bulk/refresh`, { rounds, exited0, survivors, statuses: tally.toString() });
        expect(tally.count(500) + tally.count(0)).toBe(0);
        expect(survivors).toBe(0);
      });

      it(`a client deleted while the nodes refresh its tokens: none of them active once the deletion returned (${Math.round(ROUNDS / 3)} races)`, async () => {
        const rounds = Math.round(ROUNDS / 3);
        const tally = new Tally();
        let survivors = 0;
        let minted = 0;
        await inWaves(rounds, WAVE, async (i) => {
          // A public client: no secret to hash on every node for every round (spec scenario II).
          const { client } = await c.engine.createClient({ name: `doomed ${i}`, id: `doomed-${i}`, public: true }, 'test');
          const header = { authorization: 'Basic ' + Buffer.from(`${client.client_id}:`).toString('base64') };
          const g = await c.engine.issue({ clientId: client.client_id, username: `doomed-${i}` });
          const refreshes = Promise.all(
            [0, 1, 2].map((k) => post(c.nodes[(i + k) % NODES]!, '/oauth/token', { grant_type: 'refresh_token', refresh_token: g.refresh_token }, header).then((r) => tally.add(r))),
          );
          await c.engine.deleteClient(client.client_id, 'cli:race');
          for (const r of await refreshes) {
            if (r.status !== 200) continue;
            minted++;
            if ((await introspectAt(c, i, r.body.access_token as string)).body.active !== false) survivors++;
          }
          const activeNow = (await c.store.listTokens({ clientId: client.client_id, state: 'active', now: Date.now() })).length;
          survivors += activeNow;
        });
        line(`${backend} delete-client/refresh`, { rounds, minted_in_race: minted, survivors, statuses: tally.toString() });
        expect(tally.count(500) + tally.count(0)).toBe(0);
        expect(survivors).toBe(0);
      });
    });

    describe('with rotation (--rotate-refresh-tokens)', () => {
      let c: Cluster;
      beforeAll(async () => {
        c = await startCluster(backend, { nodes: NODES, rotate: true, pgUrl });
      }, 120_000);
      afterAll(async () => c?.close());

      it(`a refresh token revoked on one node while two others rotate it: nothing of the grant active after token_revoke_success (${ROUNDS} races)`, async () => {
        const tally = new Tally();
        let acknowledged = 0;
        let survivors = 0;
        let rotated = 0;
        await inWaves(ROUNDS, WAVE, async (i) => {
          const user = `rot-revoke-${i}`;
          const g = await c.engine.issue({ clientId: c.clientId, username: user });
          const [revocation, ...refreshes] = await Promise.all(
            [revokeAt(c, i, g.refresh_token), refreshAt(c, i + 1, g.refresh_token), refreshAt(c, i + 2, g.refresh_token)].map((p) => p.then((r) => tally.add(r))),
          );
          rotated += refreshes.filter((r) => r.status === 200).length;
          if (revocation!.body.code !== 'token_revoke_success') return;
          acknowledged++;
          const active = await activeOf(c, user);
          survivors += active;
        });
        line(`${backend} revoke/rotate`, { rounds: ROUNDS, acknowledged, rotated_in_race: rotated, survivors, statuses: tally.toString() });
        expect(tally.count(500) + tally.count(0)).toBe(0);
        expect(acknowledged).toBeGreaterThan(0);
        expect(survivors).toBe(0);
      });

      it(`reuse detection racing a legitimate rotation on other nodes: no grant alive after the reuse was refused (${ROUNDS} races)`, async () => {
        const tally = new Tally();
        // RT1 is rotated to RT2 first, and only then, past the rotation race window, both are
        // presented at once: RT1 (reuse) on one node, RT2 (a legitimate rotation) on two others.
        const chains: { user: string; rt1: string; rt2: string }[] = [];
        await inWaves(ROUNDS, WAVE, async (i) => {
          const user = `reuse-${i}`;
          const g = await c.engine.issue({ clientId: c.clientId, username: user });
          const r = tally.add(await refreshAt(c, i, g.refresh_token));
          expect(r.status).toBe(200);
          chains[i] = { user, rt1: g.refresh_token, rt2: r.body.refresh_token as string };
        });
        await new Promise((resolve) => setTimeout(resolve, ROTATION_RACE_WINDOW_MS + 250));
        let detected = 0;
        let survivors = 0;
        await inWaves(ROUNDS, WAVE, async (i) => {
          const { user, rt1, rt2 } = chains[i]!;
          const [reuse] = await Promise.all([refreshAt(c, i, rt1), refreshAt(c, i + 1, rt2), refreshAt(c, i + 2, rt2)].map((p) => p.then((r) => tally.add(r))));
          if (reuse!.status !== 401) return;
          detected++;
          const alive = (await activeOf(c, user)) > 0 ? 1 : 0;
          survivors += alive;
        });
        const audit = await c.engine.audit({});
        line(`${backend} reuse/rotate`, { rounds: ROUNDS, detected, reuse_audited: audit.filter((e) => e.action === 'token.reuse_detected').length, grants_alive_after_detection: survivors, statuses: tally.toString() });
        expect(tally.count(500) + tally.count(0)).toBe(0);
        expect(detected + tally.count(503)).toBeGreaterThanOrEqual(ROUNDS);
        expect(survivors).toBe(0);
      });

      it(`concurrent rotations of one refresh token on three nodes: exactly one winner, alive, and no reuse detected (${ROUNDS} races)`, async () => {
        const tally = new Tally();
        let notOneWinner = 0;
        let deadWinners = 0;
        const started = Date.now();
        await inWaves(ROUNDS, WAVE, async (i) => {
          const g = await c.engine.issue({ clientId: c.clientId, username: `tabs-${i}` });
          const replies = await Promise.all([0, 1, 2].map((k) => refreshAt(c, i + k, g.refresh_token).then((r) => tally.add(r))));
          const winners = replies.filter((r) => r.status === 200);
          if (winners.length !== 1) {
            // Only a request the store could not serve in its retry budget (503) excuses a round without a winner.
            if (!(winners.length === 0 && replies.some((r) => r.status === 503))) notOneWinner++;
            return;
          }
          for (const r of replies.filter((r) => r.status !== 200)) expect(r.body.error).toBe(r.status === 503 ? 'temporarily_unavailable' : 'invalid_token');
          const w = winners[0]!.body;
          const alive = await Promise.all([introspectAt(c, i, w.refresh_token as string), introspectAt(c, i + 1, w.access_token as string)]);
          if (alive.some((a) => a.body.active !== true)) deadWinners++;
        });
        const tabsReuse = (await c.engine.audit({ since: started })).filter((e) => e.action === 'token.reuse_detected');
        line(`${backend} rotate/rotate`, { rounds: ROUNDS, not_one_winner: notOneWinner, dead_winners: deadWinners, reuse_detected: tabsReuse.length, statuses: tally.toString() });
        expect(tally.count(500) + tally.count(0)).toBe(0);
        expect(notOneWinner).toBe(0);
        expect(deadWinners).toBe(0);
        expect(tabsReuse).toEqual([]);
      });
    });
  });
}
