import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/engine/clock.js';
import { Engine } from '../../src/engine/engine.js';
import { InvalidInputError } from '../../src/engine/errors.js';
import { MIN_VERIFICATION_INTERVAL_S, streamSettingsOf } from '../../src/engine/stream-settings.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import type { TokenStore } from '../../src/store/store.js';
import { START } from '../helpers/engine.js';
import { tempDir } from '../helpers/load.js';
import { openTestStore, PG_SKIP_MESSAGE, PG_URL } from '../helpers/pg.js';
import { createClient } from '../helpers/server.js';

/**
 * SSF 1.0 §8.1.2.1 raced for real: a verification request and a disable of the SAME stream, at
 * once, through two engines on two handles of one store (SQLite file, PostgreSQL schema). Both
 * read the stream's settings and write them back: the forbidden outcomes are a stream not
 * disabled once the disable has answered, and a verification held by a disabled stream. The
 * clock is a ManualClock, moved past min_verification_interval before each round.
 */
const ROUNDS = 300;

/** Waits `n` turns of the microtask queue. */
async function turns(n: number): Promise<void> {
  for (let k = 0; k < n; k++) await Promise.resolve();
}

interface Handles {
  a: TokenStore;
  b: TokenStore;
  close: () => Promise<void>;
}

function describeRace(name: string, open: (() => Promise<Handles>) | undefined): void {
  describe.skipIf(open === undefined)(`a verification request racing a disable, on ${name}`, { timeout: 60_000 }, () => {
    let h: Handles;
    beforeAll(async () => {
      h = await open!();
    }, 30_000);
    afterAll(async () => h?.close());

    it(`the disable is never written over, and a disabled stream holds no verification (${ROUNDS} rounds, push and poll)`, async () => {
      const clock = new ManualClock(START);
      const options = { issuer: 'https://auth.example.test', clock };
      const one = new Engine({ ...options, node: 'node-a', store: h.a });
      const two = new Engine({ ...options, node: 'node-b', store: h.b });
      const client = await createClient(one, 'rs', { scope: 'ssf.manage' });
      const streams = [
        (await one.createStream(client.id, { delivery: { method: 'urn:ietf:rfc:8935', endpoint_url: 'https://rs.example.test/events' } })).id,
        (await one.createStream(client.id, { delivery: { method: 'urn:ietf:rfc:8936' } })).id,
      ];
      let enabledAfterDisable = 0;
      let heldWhileDisabled = 0;
      let verified = 0;
      let refused = 0;
      const failures: string[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        clock.advance(MIN_VERIFICATION_INTERVAL_S * 1000);
        await Promise.all(
          streams.map(async (id) => {
            await one.setStreamStatus(client.id, { stream_id: id, status: 'enabled' });
            // One of the two starts a few turns of the event loop after the other, by round, so that
            // every order of their reads and writes comes up (a SQLite handle answers synchronously).
            const lag = i % 16;
            const [verification, disable] = await Promise.allSettled([
              turns(lag < 8 ? 0 : lag - 8).then(() => one.requestVerification(client.id, { stream_id: id, state: `round-${i}` })),
              turns(lag < 8 ? lag : 0).then(() => two.setStreamStatus(client.id, { stream_id: id, status: 'disabled' })),
            ]);
            if (disable.status === 'rejected') failures.push(`disable: ${String(disable.reason)}`);
            if (verification.status === 'fulfilled') verified++;
            else if (verification.reason instanceof InvalidInputError && /is disabled/.test(verification.reason.message)) refused++;
            else failures.push(`verification: ${String(verification.reason)}`);
            const settings = streamSettingsOf((await h.b.getReceiver(id))!.stream);
            if (disable.status === 'fulfilled' && settings.status !== 'disabled') enabledAfterDisable++;
            if (settings.status === 'disabled' && settings.verification !== undefined) heldWhileDisabled++;
          }),
        );
      }
      console.log(`[race ${name} verification/disable] rounds=${ROUNDS * streams.length} verified=${verified} refused=${refused} enabled_after_disable=${enabledAfterDisable} held_while_disabled=${heldWhileDisabled} failures=${failures.length}`);
      expect(failures).toEqual([]);
      expect({ enabledAfterDisable, heldWhileDisabled }).toEqual({ enabledAfterDisable: 0, heldWhileDisabled: 0 });
    });
  });
}

const tmp = tempDir('tokenctl-stream-race-');
afterAll(() => tmp.cleanup());

describeRace('SQLite (two handles on one file)', async () => {
  const file = join(tmp.dir, 'streams.db');
  const a = await SqliteStore.open(file);
  const b = await SqliteStore.open(file);
  return {
    a,
    b,
    close: async () => {
      await b.close();
      await a.close();
    },
  };
});

const pgUrl = PG_URL;
if (!pgUrl) console.log(`[race stream status] ${PG_SKIP_MESSAGE}`);
describeRace(
  'PostgreSQL (two pools on one schema)',
  pgUrl === undefined
    ? undefined
    : async () => {
        const { store: a, schema, cleanup } = await openTestStore(pgUrl);
        const b = await PostgresStore.open(pgUrl, { schema });
        return {
          a,
          b,
          close: async () => {
            await b.close();
            await cleanup();
          },
        };
      },
);
