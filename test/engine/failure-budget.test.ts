import { describe, expect, it } from 'vitest';
import { ClientAuthenticator } from '../../src/engine/authenticator.js';
import { InvalidClientError, TooManyAttemptsError } from '../../src/engine/errors.js';
import { FailureBudget, sourceKey } from '../../src/engine/failure-budget.js';
import { MemoryStore } from '../../src/store/memory/index.js';
import { makeEngine } from '../helpers/engine.js';

describe('FailureBudget', () => {
  it('allows `burst` failures, then refuses until they drain at `perMinute`', () => {
    let now = 0;
    const b = new FailureBudget({ burst: 3, perMinute: 6 }, () => now);
    for (let i = 0; i < 3; i++) {
      expect(b.exhausted('k')).toBe(false);
      b.fail('k');
    }
    expect(b.exhausted('k')).toBe(true);
    expect(b.retryAfterSeconds('k')).toBe(10); // one failure drains in 10 s
    expect(b.exhausted('other')).toBe(false);
    now += 10_000;
    expect(b.exhausted('k')).toBe(false);
    b.refund('k');
    expect(b.level('k')).toBeCloseTo(1);
  });

  it('forgets the least recently failed keys past its size', () => {
    const b = new FailureBudget({ burst: 1, perMinute: 1 }, () => 0, 2);
    b.fail('a');
    b.fail('b');
    b.fail('c');
    expect([b.level('a'), b.level('b'), b.level('c')]).toEqual([0, 1, 1]);
  });

  it('keys IPv4 addresses as they are and IPv6 ones by their /64', () => {
    expect(sourceKey('192.0.2.7')).toBe('192.0.2.7');
    expect(sourceKey('::ffff:192.0.2.7')).toBe('192.0.2.7');
    expect(sourceKey('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(sourceKey('2001:db8:1:2:bbbb:cccc:dddd:eeee')).toBe('2001:db8:1:2::/64');
    expect(sourceKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(sourceKey('::1')).toBe('0:0:0:0::/64');
  });
});

describe('ClientAuthenticator brute-force budgets', () => {
  async function setup() {
    const store = new MemoryStore();
    await makeEngine({ store }).engine.createClient({ id: 'victim', name: 'victim', secret: 'right-password' }, 'cli:test');
    let now = 0;
    const auth = new ClientAuthenticator(store, {
      now: () => now,
      failures: { perSourceAndClient: { burst: 3, perMinute: 6 }, perSource: { burst: 5, perMinute: 6 }, perClient: { burst: 4, perMinute: 6 } },
    });
    return { auth, advance: (ms: number) => (now += ms) };
  }
  const wrong = (n: number) => ({ clientId: 'victim', secrets: [`wrong-${n}`] });
  const outcome = (p: Promise<unknown>) => p.then(() => 'ok', (e: unknown) => (e instanceof TooManyAttemptsError ? 429 : e instanceof InvalidClientError ? 401 : e));

  it('a source past its budget for an id gets 429 without a hash; the owner elsewhere is still heard', async () => {
    const { auth, advance } = await setup();
    const attacker = [1, 2, 3, 4].map((n) => outcome(auth.authenticate(wrong(n), '192.0.2.1')));
    expect(await Promise.all(attacker)).toEqual([401, 401, 401, 429]);
    // The same wrong password again is remembered: 401, free, whatever the budget.
    expect(await outcome(auth.authenticate(wrong(1), '192.0.2.1'))).toBe(401);
    // The id's budget (4) is spent by a second source; failed sources are refused, clean ones not.
    expect(await outcome(auth.authenticate(wrong(5), '192.0.2.2'))).toBe(401);
    expect(await outcome(auth.authenticate(wrong(6), '192.0.2.2'))).toBe(429);
    expect(await outcome(auth.authenticate({ clientId: 'victim', secrets: ['right-password'] }, '198.51.100.9'))).toBe('ok');
    // Once verified, the owner's password is never throttled, from anywhere.
    expect(await outcome(auth.authenticate({ clientId: 'victim', secrets: ['right-password'] }, '192.0.2.1'))).toBe('ok');
    advance(10_000);
    expect(await outcome(auth.authenticate(wrong(7), '192.0.2.1'))).toBe(401);
  });

  it('an unknown id is throttled exactly as a known one', async () => {
    const { auth } = await setup();
    const ghost = (n: number) => ({ clientId: 'ghost', secrets: [`wrong-${n}`] });
    const known = [];
    const unknown = [];
    for (let n = 0; n < 4; n++) known.push(await outcome(auth.authenticate(wrong(n), '192.0.2.1')));
    for (let n = 0; n < 4; n++) unknown.push(await outcome(auth.authenticate(ghost(n), '192.0.2.3')));
    expect(unknown).toEqual(known);
  });

  it('made-up ids draw from the source\'s budget: 3,000 of them cost at most its burst of hashes', async () => {
    const { auth, advance } = await setup();
    const counts = { 401: 0, 429: 0 } as Record<number | string, number>;
    for (let n = 0; n < 3000; n++) {
      const o = await outcome(auth.authenticate({ clientId: `made-up-${n}`, secrets: ['guess'] }, '192.0.2.8'));
      counts[o as number] = (counts[o as number] ?? 0) + 1;
    }
    // Each 401 is a hash: the source's burst (5), no more; every other attempt 429 before any hash.
    expect(counts).toEqual({ 401: 5, 429: 2995 });
    // The same answer for a real id this source never tried, so the 429 tells nothing about which ids exist.
    expect(await outcome(auth.authenticate(wrong(1), '192.0.2.8'))).toBe(429);
    expect(await outcome(auth.authenticate({ clientId: 'victim', secrets: ['right-password'] }, '192.0.2.8'))).toBe(429);
    // Another address, the owner's, is untouched.
    expect(await outcome(auth.authenticate({ clientId: 'victim', secrets: ['right-password'] }, '198.51.100.9'))).toBe('ok');
    advance(10_000); // one failure drained
    expect(await outcome(auth.authenticate({ clientId: 'made-up-new', secrets: ['guess'] }, '192.0.2.8'))).toBe(401);
    expect(await outcome(auth.authenticate({ clientId: 'made-up-newer', secrets: ['guess'] }, '192.0.2.8'))).toBe(429);
  });

  it('without a source (the CLI) nothing is throttled', async () => {
    const { auth } = await setup();
    for (let n = 0; n < 8; n++) expect(await outcome(auth.authenticate(wrong(n)))).toBe(401);
  });
});
