import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import type { AuditEntry, AuthorizationRecord, RedeemOutcome, TokenRecord, TokenStore } from '../../src/store/store.js';
import { tempDir } from '../helpers/load.js';
import { spawnNode } from '../helpers/node-script.js';
import { PG_SKIP_MESSAGE, PG_URL, openTestStore, withPg } from '../helpers/pg.js';
import { MINUTE, T0, makeClient, makeToken } from '../helpers/records.js';
import { roundsOf } from './cluster.js';

/**
 * RFC 6749 §4.1.2 raced for real: one authorization code redeemed at the same moment by several
 * processes on one SQLite file, and by several pools (each its own connections) on one
 * PostgreSQL schema, at READ COMMITTED and at SERIALIZABLE. Each round counts its 'redeemed' outcomes; a round with other than one is a
 * code used twice (or lost), and there must be none. Every other attempt must be 'used', and
 * nothing it carried may be stored: each grant ends with the one pair and the one audit line of
 * its winner.
 *
 * Rounds: TOKENCTL_RACE_ROUNDS (default below).
 */
const ROUNDS = roundsOf(300);
const RACERS = 4;
/** The instant of every redemption: after the codes were issued, before they expire. */
const AT = T0 + MINUTE;

/** `url` with every transaction of its connections SERIALIZABLE. */
const serializable = (url: string) => `${url}${url.includes('?') ? '&' : '?'}options=${encodeURIComponent('-c default_transaction_isolation=serializable')}`;

/** Round i's request, accepted, with its code and grant: what the racers redeem. */
function codeOf(i: number): { request: AuthorizationRecord; codeDigest: string; grantId: string } {
  const id = `race-${i}`;
  const request: AuthorizationRecord = {
    id, challengeDigest: `challenge-${id}`, browserDigest: `browser-${id}`, clientId: 'client-1', redirectUri: 'https://app.example.test/cb',
    redirectUriSent: true, scope: 'read', state: null, codeChallenge: 'x', dpopJkt: null, createdAt: T0, expiresAt: T0 + 10 * MINUTE, status: 'pending',
    decidedAt: null, verifierDigest: null, subject: null, username: null, grantedScope: null, error: null, errorDescription: null,
    codeDigest: null, codeExpiresAt: null, grantId: null, redeemedAt: null,
  };
  return { request, codeDigest: `code-${id}`, grantId: `grant-${id}` };
}

/** Every round's code, issued: in waves, so that the writes of a wave share commits. */
async function issueCodes(store: TokenStore): Promise<void> {
  for (let from = 0; from < ROUNDS; from += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, ROUNDS - from) }, async (_, k) => {
        const { request, codeDigest, grantId } = codeOf(from + k);
        await store.createAuthorization(request);
        const decision = { status: 'accepted', verifierDigest: `verifier-${request.id}`, subject: 's', username: 'u', grantedScope: 'read' } as const;
        expect(await store.decideAuthorization(request.id, decision, T0)).toBe(true);
        expect(await store.issueAuthorizationCode(request.id, { codeDigest, expiresAt: T0 + 2 * MINUTE, grantId }, T0)).toBe(true);
      }),
    );
  }
}

/** The tokens a racer carries for a grant (its name in `node`), and their audit line (its name in `detail`). */
function attempt(grantId: string, who: string): { tokens: TokenRecord[]; trail: { audit: AuditEntry } } {
  const tokens = (['refresh_token', 'access_token'] as const).map((type) => ({
    ...makeToken({ type, grantId, clientId: 'client-1', node: who, issuedAt: AT, notBefore: AT }),
    expiresAt: AT + 60 * MINUTE,
  }));
  return { tokens, trail: { audit: { at: AT, actor: 'client-1', action: 'token.issue', target: `grant:${grantId}`, count: 2, detail: who } } };
}

/** A racer process: opens the file, then for each line "round code grant" redeems the code and answers "round outcome". */
const RACER = `
  const { SqliteStore } = await import(process.env.STORE_MODULE);
  const { createInterface } = await import('node:readline');
  // attempt() of the test, in the racer's own words.
  const attempt = (grantId, who) => ({
    tokens: ['refresh_token', 'access_token'].map((type) => {
      const jti = globalThis.crypto.randomUUID();
      return { jti, digest: jti, type, grantId, clientId: 'client-1', username: 'alice', sub: 'alice', scope: 'read', audience: '', orgId: '',
        node: who, issuedAt: ${AT}, notBefore: ${AT}, expiresAt: ${AT + 60 * MINUTE}, revokedAt: null, replacedAt: null, replacedBy: null };
    }),
    trail: { audit: { at: ${AT}, actor: 'client-1', action: 'token.issue', target: 'grant:' + grantId, count: 2, detail: who } },
  });
  const store = await SqliteStore.open(process.env.DB, { create: false });
  process.stdout.write('ready\\n');
  for await (const line of createInterface({ input: process.stdin })) {
    if (line === 'end') break;
    const [round, code, grantId] = line.split(' ');
    const { tokens, trail } = attempt(grantId, process.env.WHO);
    const outcome = await store.redeemAuthorizationCode(code, ${AT}, tokens, trail);
    process.stdout.write(round + ' ' + outcome + '\\n');
  }
  await store.close();`;

/** The lines a child writes, awaited one at a time; once it has exited, a wait fails with its stderr. */
class Lines {
  private readonly queue: string[] = [];
  private waiting: { resolve: (line: string) => void; reject: (error: Error) => void } | undefined;
  private buffer = '';
  private stderr = '';
  private exited: Error | undefined;

  constructor(readonly child: ChildProcessWithoutNullStreams) {
    child.stdout.on('data', (d: Buffer) => {
      this.buffer += d.toString();
      for (let n = this.buffer.indexOf('\n'); n >= 0; n = this.buffer.indexOf('\n')) {
        const line = this.buffer.slice(0, n);
        this.buffer = this.buffer.slice(n + 1);
        const waiting = this.waiting;
        this.waiting = undefined;
        if (waiting) waiting.resolve(line);
        else this.queue.push(line);
      }
    });
    child.stderr.on('data', (d: Buffer) => (this.stderr += d.toString()));
    child.once('exit', (code) => {
      this.exited = new Error(`racer exited (${code}): ${this.stderr}`);
      this.waiting?.reject(this.exited);
    });
  }

  next(): Promise<string> {
    const line = this.queue.shift();
    if (line !== undefined) return Promise.resolve(line);
    if (this.exited) return Promise.reject(this.exited);
    return new Promise((resolve, reject) => (this.waiting = { resolve, reject }));
  }
}

/** What the rounds came to: rounds without exactly one winner, and every outcome counted. */
class Tally {
  notOneWinner = 0;
  readonly outcomes: Record<RedeemOutcome, number> = { redeemed: 0, used: 0, invalid: 0 };
  /** Who won each round (a racer's name). */
  readonly winners = new Map<string, number>();

  add(outcomes: { who: string; outcome: RedeemOutcome }[]): void {
    for (const { outcome } of outcomes) this.outcomes[outcome]++;
    const won = outcomes.filter((o) => o.outcome === 'redeemed');
    if (won.length !== 1) this.notOneWinner++;
    for (const { who } of won) this.winners.set(who, (this.winners.get(who) ?? 0) + 1);
  }
}

/** After the rounds: each grant holds exactly its winner's pair, and the trail one line per grant, its winner's. */
async function expectOneGrantEach(store: TokenStore): Promise<void> {
  const tokens = await store.listTokens({ clientId: 'client-1' });
  const perGrant = new Map<string, Set<string>>();
  for (const t of tokens) perGrant.set(t.grantId, (perGrant.get(t.grantId) ?? new Set()).add(t.node));
  expect(tokens).toHaveLength(2 * ROUNDS);
  expect(perGrant.size).toBe(ROUNDS);
  expect([...perGrant.values()].filter((nodes) => nodes.size !== 1)).toEqual([]); // both tokens from one racer
  const audit = await store.listAudit({ limit: 10 * ROUNDS });
  expect(audit).toHaveLength(ROUNDS);
  for (const line of audit) {
    const grantId = line.target.slice('grant:'.length);
    expect([...perGrant.get(grantId)!]).toEqual([line.detail]); // the line is the winner's
  }
}

describe('an authorization code is redeemed once, whoever races for it', { timeout: 300_000 }, () => {
  describe(`${RACERS} processes on one SQLite file`, () => {
    const tmp = tempDir('tokenctl-code-race-');
    const file = join(tmp.dir, 'codes.db');
    let store: SqliteStore;
    let racers: { who: string; lines: Lines }[] = [];

    beforeAll(async () => {
      store = await SqliteStore.open(file);
      await store.createClient(makeClient({ id: 'client-1' }), {});
      await issueCodes(store);
      racers = Array.from({ length: RACERS }, (_, k) => {
        const who = `process-${k}`;
        return { who, lines: new Lines(spawnNode(RACER, { DB: file, WHO: who })) };
      });
      for (const r of racers) expect(await r.lines.next()).toBe('ready');
    }, 120_000);
    afterAll(async () => {
      for (const r of racers) r.lines.child.stdin.end('end\n');
      await Promise.all(racers.map((r) => new Promise((resolve) => (r.lines.child.exitCode !== null ? resolve(null) : r.lines.child.once('exit', resolve)))));
      await store?.close();
      tmp.cleanup();
    });

    it(`every round has exactly one 'redeemed', the others 'used', and only the winner's writes (${ROUNDS} rounds)`, async () => {
      const tally = new Tally();
      for (let i = 0; i < ROUNDS; i++) {
        const { codeDigest, grantId } = codeOf(i);
        // The same line to every racer at once: they take turns on the file's write lock in whatever order they reach it.
        for (const r of racers) r.lines.child.stdin.write(`${i} ${codeDigest} ${grantId}\n`);
        const answers = await Promise.all(racers.map(async (r) => ({ who: r.who, line: await r.lines.next() })));
        tally.add(answers.map(({ who, line }) => {
          const [round, outcome] = line.split(' ');
          expect(round).toBe(String(i));
          return { who, outcome: outcome as RedeemOutcome };
        }));
      }
      console.log(`[code race sqlite] rounds=${ROUNDS} not_one_winner=${tally.notOneWinner} ${JSON.stringify(tally.outcomes)} winners=${JSON.stringify(Object.fromEntries(tally.winners))}`);
      expect(tally.notOneWinner).toBe(0);
      expect(tally.outcomes).toEqual({ redeemed: ROUNDS, used: (RACERS - 1) * ROUNDS, invalid: 0 });
      // A race between processes: more than one of them won some round.
      expect(tally.winners.size).toBeGreaterThan(1);
      await expectOneGrantEach(store);
    });
  });

  // READ COMMITTED (the default), and every transaction SERIALIZABLE (a startup option), where the losers are retried.
  const isolations = PG_URL ? [['READ COMMITTED', PG_URL], ['SERIALIZABLE', serializable(PG_URL)]] : [];
  describe.each(isolations)(`${RACERS} pools on one PostgreSQL schema at %s`, (isolation, url) => {
    let base: Awaited<ReturnType<typeof openTestStore>>;
    let pools: PostgresStore[] = [];

    beforeAll(async () => {
      base = await openTestStore(url);
      await base.store.createClient(makeClient({ id: 'client-1' }), {});
      await issueCodes(base.store);
      pools = await Promise.all(Array.from({ length: RACERS }, () => PostgresStore.open(url, { schema: base.schema, poolSize: 2 })));
    }, 120_000);
    afterAll(async () => {
      await Promise.all(pools.map((p) => p.close()));
      await base?.cleanup();
    });

    it('really runs at that isolation level', async () => {
      const level = await withPg(url, undefined, async (db) => (await db.query<{ level: string }>("SELECT current_setting('default_transaction_isolation') AS level")).rows[0]?.level);
      expect(level?.toUpperCase()).toBe(isolation);
    });

    it(`every round has exactly one 'redeemed', the others 'used', and only the winner's writes (${ROUNDS} rounds)`, async () => {
      const tally = new Tally();
      // Two attempts per pool, each on a connection of its own: eight transactions race for the row.
      const racers = pools.flatMap((pool, k) => [0, 1].map((n) => ({ pool, who: `pool-${k}-${n}` })));
      for (let i = 0; i < ROUNDS; i++) {
        const { codeDigest, grantId } = codeOf(i);
        const outcomes = await Promise.all(
          racers.map(async ({ pool, who }) => {
            const { tokens, trail } = attempt(grantId, who);
            return { who, outcome: await pool.redeemAuthorizationCode(codeDigest, AT, tokens, trail) };
          }),
        );
        tally.add(outcomes);
      }
      console.log(`[code race postgres ${isolation}] rounds=${ROUNDS} not_one_winner=${tally.notOneWinner} ${JSON.stringify(tally.outcomes)} winners=${JSON.stringify(Object.fromEntries(tally.winners))}`);
      expect(tally.notOneWinner).toBe(0);
      expect(tally.outcomes).toEqual({ redeemed: ROUNDS, used: (racers.length - 1) * ROUNDS, invalid: 0 });
      expect(tally.winners.size).toBeGreaterThan(1);
      await expectOneGrantEach(base.store);
    });
  });

  if (!PG_URL) it.skip(PG_SKIP_MESSAGE, () => undefined);
});
