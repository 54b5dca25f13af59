import { randomUUID } from 'node:crypto';
import { PostgresStore } from '../../src/store/postgres/store.js';
import type { DeliveryOutcome, RevocationEvent } from '../../src/store/store.js';
import { opTokens, type ClaimLog, type OpLog, type SettleLog } from './pg-events-plan.js';

/*
 * One process of the PostgreSQL outbox races (postgres-events.test.ts), run as
 * `node --import tsx test/race/pg-events-worker.ts` with its orders in the environment:
 * - MODE=claim: a push deliverer, OWNER, for ROUNDS rounds of claim, "deliver" (settle), release;
 * - MODE=revoke: a node revoking OPS prepared tokens (revokeToken with and without its cascade,
 *   revokeGrant, revokeBulk by user in batches of one), WAVE at a time, each with its event.
 * It prints one JSON line: what it did, for the test to check against the database.
 */

const env = (name: string): string => {
  const value = process.env[name];
  if (value === undefined) throw new Error(`${name} is not set`);
  return value;
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function claimLoop(store: PostgresStore): Promise<unknown> {
  const owner = env('OWNER');
  const rounds = Number(env('ROUNDS'));
  const leaseMs = Number(env('LEASE_MS'));
  const claims: ClaimLog[] = [];
  const settles: SettleLog[] = [];
  let stale = 0;
  for (let round = 0; round < rounds; round++) {
    const now = Date.now();
    const claimed = await store.claimPushReceivers(owner, now, leaseMs, 2, 3);
    for (const c of claimed) {
      claims.push({ owner, receiverId: c.receiver.id, now, until: now + leaseMs, events: c.deliveries.map((d) => d.id) });
      // Now and then the deliverer is slow, past its lease: its settlements must then count for nothing.
      const slow = Math.random() < 0.05;
      if (slow) {
        stale++;
        await sleep(leaseMs + 10);
      }
      for (const d of c.deliveries) {
        const roll = Math.random();
        const at = Date.now();
        const outcome: DeliveryOutcome =
          roll < 0.85 ? { kind: 'delivered', at } : roll < 0.97 ? { kind: 'retry', at, retryAt: at + 20, error: 'HTTP 503' } : { kind: 'dead', at, error: 'HTTP 400' };
        await store.settleDelivery(owner, c.receiver.id, d.id, outcome);
        if (outcome.kind === 'delivered') {
          settles.push({ owner, receiverId: c.receiver.id, eventId: d.id, claimedAt: now, leaseUntil: now + leaseMs, returnedAt: Date.now() });
        }
        if (outcome.kind !== 'delivered') break; // its later events wait behind it
      }
      if (Math.random() < 0.7) await store.releaseReceiver(owner, c.receiver.id);
    }
    await sleep(Math.random() * 4);
  }
  return { claims, settles, stale };
}

async function revokeLoop(store: PostgresStore): Promise<unknown> {
  const p = Number(env('PROCESS'));
  const ops = Number(env('OPS'));
  const wave = Number(env('WAVE'));
  const log: OpLog[] = [];
  const run = async (i: number): Promise<void> => {
    const t = opTokens(p, i);
    const at = Date.now();
    const event: RevocationEvent = { id: randomUUID(), at, reason: 'revoked', scope: t.kind === 'access' ? 'token' : t.kind === 'bulk' ? 'user' : 'grant', username: t.username };
    const entry: OpLog = { op: `${t.kind} ${p}-${i}`, eventId: event.id, jtis: t.jtis, changed: false };
    try {
      if (t.kind === 'access') entry.changed = await store.revokeToken(t.jtis[0]!, at, false, { event });
      else if (t.kind === 'cascade') entry.changed = await store.revokeToken(t.jtis[0]!, at, true, { event });
      else if (t.kind === 'grant') entry.changed = (await store.revokeGrant(t.grants[0]!, at, { event })) > 0;
      else {
        let revoked = 0;
        let resume: string | undefined;
        for (let more = true; more; ) {
          // Each batch its own event (ports/token-writes.ts); the op is logged with the last
          // one written, which commits with the op's last revoking batch.
          const own: RevocationEvent = { ...event, id: randomUUID() };
          const batch = await store.revokeBulk({ username: t.username }, at, 1, resume, { event: own });
          if (batch.revoked > 0) entry.eventId = own.id;
          revoked += batch.revoked;
          more = batch.more;
          resume = batch.resume;
        }
        entry.changed = revoked > 0;
      }
    } catch (error) {
      entry.error = String(error);
    }
    log.push(entry);
  };
  for (let start = 0; start < ops; start += wave) {
    await Promise.all(Array.from({ length: Math.min(wave, ops - start) }, (_, k) => run(start + k)));
  }
  return { ops: log };
}

const store = await PostgresStore.open(env('DB'), { poolSize: 4, create: false });
try {
  const result = env('MODE') === 'claim' ? await claimLoop(store) : await revokeLoop(store);
  process.stdout.write(`${JSON.stringify(result)}\n`);
} finally {
  await store.close();
}
