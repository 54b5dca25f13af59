import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { killAllChildren, startServe, SystemTimeClock, tempDir, type ServeProcess } from '../helpers/load.js';

/**
 * Issue 19, item 1: brute force of one client's password does not lock its owner out.
 *
 * A fresh `serve` process (it has never verified the owner's password, as after a restart or a
 * `rotate-secret`) is flooded with wrong passwords for the client's id, each one new, from 16
 * keep-alive connections spread over 8 loopback source addresses (127.0.0.2–9). Meanwhile the
 * owner, from 127.0.0.1, introspects with the correct password, one request after another. The
 * owner is never refused and its p99 stays under 100 ms; the flood is answered 429 with
 * Retry-After once its budgets are spent, and most of it never costs a hash.
 */

const SECRET = 'owner-password-0123456789-abcdefghijklmnop';
const FLOOD_MS = 4_000;

interface Answer {
  status: number;
  retryAfter: string | undefined;
  ms: number;
}

function introspect(url: string, agent: Agent, clientSecret: string): Promise<Answer> {
  const body = new URLSearchParams({ token: 'tca_not-a-token', token_type_hint: 'access_token', client_id: 'victim', client_secret: clientSecret }).toString();
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/oauth/introspection`,
      { method: 'POST', agent, headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'], ms: performance.now() - started }));
        res.on('error', reject);
      },
    );
    req.setTimeout(10_000, () => req.destroy(new Error('no answer within 10 s')));
    req.on('error', reject);
    req.end(body);
  });
}

function p99(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)]!;
}

describe('a flood of wrong passwords for one client id', { timeout: 60_000 }, () => {
  const tmp = tempDir('tokenctl-brute-');
  const db = join(tmp.dir, 'tokens.db');
  let server: ServeProcess;

  beforeAll(async () => {
    const store = await SqliteStore.open(db);
    try {
      await new Engine({ store, clock: new SystemTimeClock() }).createClient({ id: 'victim', name: 'victim', secret: SECRET }, 'cli:test');
    } finally {
      await store.close();
    }
    server = await startServe(['--db', db, '--log-level', 'warn']);
  }, 60_000);
  afterAll(async () => {
    await server?.kill('SIGTERM');
    await killAllChildren();
    tmp.cleanup();
  });

  it("the owner's correct password is never refused and answered within 100 ms p99", async () => {
    const attackers = Array.from({ length: 16 }, (_, i) => new Agent({ keepAlive: true, maxSockets: 1, localAddress: `127.0.0.${2 + (i % 8)}` }));
    const owner = new Agent({ keepAlive: true, maxSockets: 1, localAddress: '127.0.0.1' });
    const flood: Answer[] = [];
    const mine: Answer[] = [];
    const end = Date.now() + FLOOD_MS;
    let guess = 0;
    try {
      const floods = attackers.map(async (agent) => {
        while (Date.now() < end) flood.push(await introspect(server.url, agent, `wrong-${++guess}-${Math.random().toString(36).slice(2)}`));
      });
      // The owner starts once the flood is under way, and has never been verified by this server.
      await new Promise((r) => setTimeout(r, 500));
      while (Date.now() < end - 200) {
        mine.push(await introspect(server.url, owner, SECRET));
        await new Promise((r) => setTimeout(r, 10));
      }
      await Promise.all(floods);
    } finally {
      for (const agent of [...attackers, owner]) agent.destroy();
    }

    const statuses = (answers: Answer[]) => answers.reduce<Record<number, number>>((n, a) => ({ ...n, [a.status]: (n[a.status] ?? 0) + 1 }), {});
    const summary = `owner ${JSON.stringify(statuses(mine))} p99 ${p99(mine.map((a) => a.ms)).toFixed(1)} ms (first ${mine[0]?.ms.toFixed(1)} ms); flood ${JSON.stringify(statuses(flood))}`;
    // The owner: every answer 200 (the made-up token is simply not active), p99 under 100 ms.
    expect(mine.length, summary).toBeGreaterThan(50);
    expect(mine.every((a) => a.status === 200), summary).toBe(true);
    expect(p99(mine.map((a) => a.ms)), summary).toBeLessThan(100);
    // The flood: refused 401 while its budgets last, then 429 with a Retry-After; before that,
    // what overflows the client's bounded queue of hashes is 503. Never a 500.
    expect(flood.every((a) => a.status === 401 || a.status === 429 || a.status === 503), summary).toBe(true);
    const throttled = flood.filter((a) => a.status === 429);
    expect(throttled.length, summary).toBeGreaterThan(flood.length / 2);
    expect(throttled.every((a) => Number(a.retryAfter) >= 1), summary).toBe(true);
    // Each 401 cost a hash: the budget of the id (60 at once, 2 a second) bounds them.
    expect(flood.filter((a) => a.status === 401).length, summary).toBeLessThan(60 + 2 * (FLOOD_MS / 1000) + 16);
  });
});
