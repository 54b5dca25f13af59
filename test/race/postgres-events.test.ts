import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/store.js';
import type { TokenRecord } from '../../src/store/store.js';
import { PG_SKIP_MESSAGE, PG_URL, dropSchema, testSchemaName, withPg } from '../helpers/pg.js';
import { makeClient, makeToken } from '../helpers/records.js';
import { makePushReceiver } from '../store/events-contract.js';
import { roundsOf } from './cluster.js';
import { opTokens, type ClaimLog, type OpLog, type SettleLog } from './pg-events-plan.js';

/*
 * The PostgreSQL outbox raced by real processes (docs/events.md): push deliverers on several
 * processes claiming the same receivers, and revocations on several processes while receivers are
 * being registered. Each race counts what the EventStore contract forbids and asserts there is
 * none:
 * - a receiver leased to an owner while another owner's lease on it was live;
 * - an event handed out by a claim made after its holder's 'delivered' (within its lease) returned;
 * - a revocation that committed after a receiver was registered without a delivery to it (and
 *   one that committed before, with one).
 * At READ COMMITTED and at SERIALIZABLE. Rounds: TOKENCTL_RACE_ROUNDS (default below).
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const WORKER = path.join(ROOT, 'test/race/pg-events-worker.ts');
const ROUNDS = roundsOf(200);
const LEASE_MS = 150;

// The third: the store at its own READ COMMITTED on a database whose default is REPEATABLE READ
// (a DBA's setting, YugabyteDB's default), which a statement outside a transaction inherits.
const LEVELS = ['read committed', 'serializable', 'repeatable read by default'] as const;
type Level = (typeof LEVELS)[number];

/** `url` with its transactions at `level` (a startup option: a direct connection). */
function atLevel(url: string, level: Level, schema: string): string {
  const options =
    level === 'serializable'
      ? `&isolation=serializable&options=${encodeURIComponent('-c default_transaction_isolation=serializable')}`
      : level === 'repeatable read by default'
        ? `&options=${encodeURIComponent('-c default_transaction_isolation=repeatable\\ read')}`
        : '';
  return `${url}${url.includes('?') ? '&' : '?'}schema=${schema}${options}`;
}

/** Runs the worker in a process of its own; resolves with the JSON line it prints. */
function worker<T>(env: Record<string, string>): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', WORKER], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve(JSON.parse(stdout) as T);
      else reject(new Error(`worker ${JSON.stringify(env.MODE)} exited ${code}: ${stderr.slice(-2000)}`));
    });
  });
}

function line(what: string, figures: Record<string, number | string>): void {
  console.log(`[race ${what}] ${Object.entries(figures).map(([k, v]) => `${k}=${v}`).join(' ')}`);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A token that stays live for a day from now. */
const live = (o: Partial<TokenRecord>): TokenRecord => makeToken({ clientId: 'race-client', issuedAt: Date.now(), expiresAt: Date.now() + 86_400_000, ...o });

if (!PG_URL) describe.skip('the PostgreSQL outbox raced by processes', () => it(PG_SKIP_MESSAGE, () => undefined));

describe.skipIf(!PG_URL)('the PostgreSQL outbox raced by processes', { timeout: 300_000 }, () => {
  const url = PG_URL ?? '';

  describe.each(LEVELS)('at %s', (level) => {
    let schema: string;
    let store: PostgresStore;
    beforeAll(async () => {
      schema = testSchemaName();
      await (await PostgresStore.open(url, { schema })).close();
      store = await PostgresStore.open(atLevel(url, level, schema), { poolSize: 4 });
      await store.createClient(makeClient({ id: 'race-client' }), {});
    }, 60_000);
    afterAll(async () => {
      await store?.close();
      if (schema) await dropSchema(url, schema);
    });

    it(`three deliverer processes claiming six receivers for ${ROUNDS} rounds each: no receiver held by two owners at once, no event handed out again once delivered`, async () => {
      const receivers = ['p1', 'p2', 'p3', 'p4', 'p5', 'p6'];
      for (const id of receivers) await store.createReceiver(makePushReceiver(id), {});
      // Every lease change, as the database serialised it (test instrumentation, in this schema only).
      await withPg(url, schema, (db) =>
        db.query(`CREATE TABLE lease_log (receiver_id text, old_owner text, old_until bigint, new_owner text, new_until bigint);
          CREATE FUNCTION log_lease() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
            INSERT INTO "${schema}".lease_log VALUES (NEW.receiver_id, OLD.lease_owner, OLD.lease_until, NEW.lease_owner, NEW.lease_until); RETURN NEW; END $$;
          CREATE TRIGGER lease_log AFTER UPDATE ON receiver_leases FOR EACH ROW
            WHEN (OLD.lease_owner IS DISTINCT FROM NEW.lease_owner OR OLD.lease_until IS DISTINCT FROM NEW.lease_until) EXECUTE FUNCTION log_lease()`),
      );
      // Events keep coming while they claim: revocations of this process.
      let producing = true;
      let produced = 0;
      const revoke = async () => {
        const t = live({});
        await store.insertTokens([t]);
        const at = Date.now();
        await store.revokeToken(t.jti, at, false, { event: { id: randomUUID(), at, reason: 'revoked', scope: 'token', jti: t.jti, clientId: 'race-client' } });
        produced++;
      };
      for (let i = 0; i < 40; i++) await revoke();
      const producer = (async () => {
        while (producing) {
          await Promise.all([revoke(), revoke()]);
          await sleep(3);
        }
      })();
      type ClaimResult = { claims: ClaimLog[]; settles: SettleLog[]; stale: number };
      const base = { MODE: 'claim', DB: atLevel(url, level, schema), ROUNDS: String(ROUNDS), LEASE_MS: String(LEASE_MS) };
      let results: ClaimResult[];
      try {
        results = await Promise.all(['n1', 'n2', 'n3'].map((owner) => worker<ClaimResult>({ ...base, OWNER: owner })));
      } finally {
        producing = false;
        await producer;
      }
      const claims = results.flatMap((r) => r.claims);
      const settles = results.flatMap((r) => r.settles);

      // 1. Leases, as the database saw them: taken from another owner while its lease was live.
      const log = await withPg(url, schema, async (db) =>
        (await db.query<{ old_owner: string | null; old_until: string; new_owner: string | null; new_until: string }>('SELECT * FROM lease_log')).rows,
      );
      const takenOver = log.filter((l) => l.new_owner !== null && l.old_owner !== null && l.old_owner !== l.new_owner);
      const doubleHeld = takenOver.filter((l) => Number(l.old_until) > Number(l.new_until) - LEASE_MS).length;

      // 2. An event handed out by a claim made after an earlier holder's 'delivered' had returned within its lease.
      // After the settlement returned, not after the holder's claim began: a claim's `now` is read before
      // its call, which can run after another owner's claim and release; being handed out before the
      // delivery committed is allowed (the first holder released it unsettled, or held it first).
      const deliveredInLease = new Map<string, number>(); // receiver|event -> when its 'delivered' returned
      for (const s of settles) if (s.returnedAt < s.leaseUntil) deliveredInLease.set(`${s.receiverId}|${s.eventId}`, s.returnedAt);
      const again: string[] = [];
      for (const c of claims) {
        for (const e of c.events) {
          const key = `${c.receiverId}|${e}`;
          const deliveredAt = deliveredInLease.get(key);
          if (deliveredAt !== undefined && c.now > deliveredAt) {
            again.push(JSON.stringify({ key, claims: claims.filter((x) => x.receiverId === c.receiverId && x.events.includes(e)), settles: settles.filter((x) => `${x.receiverId}|${x.eventId}` === key) }));
          }
        }
      }
      const handedAgain = again.length;

      // 3. Nothing lost: one deliverer drains what is left; every delivery ends delivered or dead.
      for (let i = 0; i < 1000; i++) {
        const claimed = await store.claimPushReceivers('drain', Date.now(), 60_000, 10, 100);
        if (claimed.length === 0 && (await store.listReceivers()).every((r) => r.pending === 0)) break;
        for (const c of claimed) {
          for (const d of c.deliveries) await store.settleDelivery('drain', c.receiver.id, d.id, { kind: 'delivered', at: Date.now() });
          await store.releaseReceiver('drain', c.receiver.id);
        }
        if (claimed.length === 0) await sleep(25); // a retry not due yet
      }
      const status = await store.listReceivers();
      const dead = status.reduce((n, r) => n + r.dead, 0);
      line(`postgres outbox claims (${level})`, {
        rounds: ROUNDS, events: produced, claims: claims.length, delivered: settles.length, taken_over: takenOver.length,
        slow_deliverers: results.reduce((n, r) => n + r.stale, 0), double_held: doubleHeld, handed_again: handedAgain, dead,
      });
      expect(claims.length).toBeGreaterThan(ROUNDS / 10); // the race happened (claims come only when something is due)
      expect(settles.length).toBeGreaterThan(0);
      expect(takenOver.length).toBeGreaterThan(0); // leases did move between owners
      expect(doubleHeld).toBe(0);
      expect(again).toEqual([]);
      expect(status.map((r) => r.pending)).toEqual(receivers.map(() => 0));
      expect(await store.purgeDeliveredEvents(100_000)).toBe(produced - (await eventsWithDeliveries(url, schema)));
    });

    it(`two revoking processes (${ROUNDS * 2} revocations each, every kind) while receivers are registered: no event lost for a receiver registered before the revocation committed`, async () => {
      const ops = ROUNDS * 2;
      // The tokens of every op of both processes (pg-events-worker.ts opTokens).
      const tokens: TokenRecord[] = [];
      for (const p of [1, 2]) {
        for (let i = 0; i < ops; i++) {
          const t = opTokens(p, i);
          for (const g of t.grants) {
            tokens.push(live({ jti: `${g}-refresh`, type: 'refresh_token', grantId: g, username: t.username }));
            tokens.push(live({ jti: `${g}-access`, type: 'access_token', grantId: g, username: t.username }));
          }
        }
      }
      await store.insertTokens(tokens);

      // The observer: a READ COMMITTED snapshot, each time a receiver appears, of the receivers and
      // the revoked tokens (one statement). A receiver in a snapshot committed before it; a token
      // not yet revoked in it was revoked by a transaction that committed after it.
      const snapshots: { receivers: Set<string>; revoked: Set<string> }[] = [];
      let observing = true;
      const observer = withPg(url, schema, async (db: pg.Client) => {
        // The receivers seen so far: the last snapshot's (one look at a time, so never outdated).
        const known = () => snapshots.at(-1)?.receivers.size ?? 0;
        const look = async () => {
          const { rows } = await db.query<{ receivers: string[]; revoked: string[] | null }>(
            `SELECT (SELECT coalesce(array_agg(id), '{}') FROM receivers) AS receivers,
              CASE WHEN (SELECT count(*) FROM receivers) > $1 THEN (SELECT coalesce(array_agg(jti), '{}') FROM tokens WHERE revoked_at IS NOT NULL) END AS revoked`,
            [known()],
          );
          const row = rows[0]!;
          if (row.revoked !== null) snapshots.push({ receivers: new Set(row.receivers), revoked: new Set(row.revoked) });
        };
        while (observing) await look();
        await look();
      });

      const base = { MODE: 'revoke', DB: atLevel(url, level, schema), OPS: String(ops), WAVE: '8' };
      let done = false;
      const revokers = Promise.all([1, 2].map((p) => worker<{ ops: OpLog[] }>({ ...base, PROCESS: String(p) }))).finally(() => (done = true));
      // Receivers registered one after another while the revocations run.
      const created: string[] = [];
      await sleep(50);
      while (!done && created.length < 80) {
        const id = `rc-${String(created.length + 1).padStart(2, '0')}`;
        await store.createReceiver(makePushReceiver(id), {});
        created.push(id);
        await sleep(5 + Math.random() * 30);
      }
      const results = await revokers;
      observing = false;
      await observer;

      const revocations = results.flatMap((r) => r.ops);
      const failed = revocations.filter((o) => o.error !== undefined);
      const deliveries = await withPg(url, schema, async (db) =>
        new Set(
          (await db.query<{ k: string }>("SELECT d.receiver_id || '|' || e.id AS k FROM event_deliveries d JOIN security_events e ON e.seq = d.event_seq")).rows.map(
            (r) => r.k,
          ),
        ),
      );
      let owed = 0;
      let lost = 0;
      let notOwed = 0;
      let unexpected = 0;
      let partial = 0;
      for (const op of revocations) {
        if (!op.changed) continue;
        const got = created.filter((rc) => deliveries.has(`${rc}|${op.eventId}`)).length;
        if (got > 0 && got < created.length) partial++;
        for (const s of snapshots) {
          const committedAfter = op.jtis.some((j) => !s.revoked.has(j));
          // A bulk revocation is logged with the event of its last revoking batch, which commits with it.
          const committedBefore = op.jtis.every((j) => s.revoked.has(j));
          for (const rc of created) {
            const has = deliveries.has(`${rc}|${op.eventId}`);
            if (s.receivers.has(rc) && committedAfter) {
              owed++;
              if (!has) lost++;
            } else if (!s.receivers.has(rc) && committedBefore) {
              notOwed++;
              if (has) unexpected++;
            }
          }
        }
      }
      line(`postgres outbox vs receivers (${level})`, {
        revocations: revocations.length, failed: failed.length, receivers: created.length, snapshots: snapshots.length,
        raced: partial, owed, lost, not_owed: notOwed, unexpected,
      });
      expect(failed).toEqual([]);
      expect(revocations.filter((o) => !o.changed)).toEqual([]);
      expect(created.length).toBeGreaterThan(3);
      expect(partial).toBeGreaterThan(0); // some revocations committed while receivers were being registered
      expect(lost).toBe(0);
      expect(unexpected).toBe(0);
    });
  });
});

/** How many events still have a delivery (dead letters). */
async function eventsWithDeliveries(url: string, schema: string): Promise<number> {
  return withPg(url, schema, async (db) => Number((await db.query<{ n: string }>('SELECT count(DISTINCT event_seq) AS n FROM event_deliveries')).rows[0]!.n));
}
