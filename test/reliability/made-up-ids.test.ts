import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveOneClient, type ServeProcess } from '../helpers/load.js';

/**
 * SECURITY.md, "Burning CPU": made-up client ids cost at most the budgets' hashes. A real `serve`
 * (default budgets: 100 failed hashes per address at once, 120 a minute) gets 3,000 requests from
 * one address, each naming a client id nobody registered, with a password: each would be hashed
 * (the same work as for a real client, so that timing does not tell which ids exist). The
 * address's budget must stop them: at most its burst and refill of 401s, the rest 429 without a hash.
 */
const SECRET = 'owner-password-0123456789-abcdefghijklmnop';
const ATTACKS = 3000;

function introspect(url: string, agent: Agent, clientId: string, secret: string): Promise<{ status: number; retryAfter?: string }> {
  const body = new URLSearchParams({ token: 'tca_x', client_id: clientId, client_secret: secret }).toString();
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/oauth/introspection`,
      { method: 'POST', agent, headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] }));
      },
    );
    req.setTimeout(10_000, () => req.destroy(new Error('no answer within 10 s')));
    req.on('error', reject);
    req.end(body);
  });
}

describe('a flood of made-up client ids from one address', { timeout: 90_000 }, () => {
  let server: ServeProcess;
  let stop: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    ({ server, stop } = await serveOneClient('tokenctl-made-up-', SECRET));
  }, 60_000);
  afterAll(async () => {
    await stop?.();
  });

  it('reaches 429 within the address\'s budget of hashes; another address is still served', async () => {
    const attacker = new Agent({ keepAlive: true, maxSockets: 8, localAddress: '127.0.0.2' });
    const statuses: Record<number, number> = {};
    let retryAfterOn429 = true;
    const started = performance.now();
    try {
      let n = 0;
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (n < ATTACKS) {
            const a = await introspect(server.url, attacker, `made-up-${n++}`, 'a-guess');
            statuses[a.status] = (statuses[a.status] ?? 0) + 1;
            if (a.status === 429 && !(Number(a.retryAfter) >= 1)) retryAfterOn429 = false;
          }
        }),
      );
    } finally {
      attacker.destroy();
    }
    const seconds = (performance.now() - started) / 1000;
    // 100 at once, then 2 a second: what SECURITY.md promises, with a second's slack.
    const budget = 100 + Math.ceil(2 * (seconds + 1));
    console.log(`made-up ids: ${JSON.stringify(statuses)} in ${seconds.toFixed(1)} s (budget ${budget} hashes)`);
    expect(Object.keys(statuses).every((s) => ['401', '429', '503'].includes(s))).toBe(true);
    expect(statuses[401] ?? 0).toBeGreaterThan(0);
    expect(statuses[401] ?? 0).toBeLessThanOrEqual(budget);
    expect(statuses[429] ?? 0).toBeGreaterThanOrEqual(ATTACKS - budget - (statuses[503] ?? 0));
    expect(retryAfterOn429).toBe(true);

    const owner = new Agent({ keepAlive: false, localAddress: '127.0.0.1' });
    try {
      expect((await introspect(server.url, owner, 'victim', SECRET)).status).toBe(200);
    } finally {
      owner.destroy();
    }
  });
});
