import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { SigningKeys } from '../../src/events/keys.js';
import { signSet } from '../../src/events/set.js';
import { MemoryStore } from '../../src/store/memory/index.js';
import type { RevocationEvent } from '../../src/store/store.js';
import { ResourceServer, type IntrospectionAnswer, type ResourceServerOptions } from '../../src/resource-server/index.js';
import { AnswerCache, covers } from '../../src/resource-server/cache.js';
import { startFakeTransmitter, type FakeTransmitter } from './fake-transmitter.js';
import { ManualTimers } from './manual-clock.js';

/**
 * The module against a transmitter whose timing the test controls: caching, each event scope,
 * the introspection in flight when an event arrives, the fallback while the stream is down, SET
 * verification. Where the module itself waits (the fallback age, the poller's back-off and its
 * pause after a refused SET, the JWKS refetch interval), a {@link ManualTimers} clock moves time
 * on instead. End to end against a real `serve`: e2e.test.ts.
 */
const soon = Math.floor(Date.now() / 1000) + 3600;
const answer = (jti: string, username = 'alice', clientId = 'app', extra: Partial<IntrospectionAnswer> = {}): IntrospectionAnswer => ({
  active: true,
  jti,
  username,
  client_id: clientId,
  token_type: 'access_token',
  scope: 'read write',
  exp: soon,
  aud: 'rs',
  ...extra,
});

let fake: FakeTransmitter;
let rs: ResourceServer | undefined;
afterEach(async () => {
  await rs?.close();
  rs = undefined;
  await fake?.close();
});

async function setup(options: Partial<ResourceServerOptions> = {}): Promise<ResourceServer> {
  fake = await startFakeTransmitter();
  rs = new ResourceServer({ url: fake.url, clientId: 'rs-client', clientSecret: 's3cret', audience: 'rs', cache: { maxAgeMs: 600_000 }, ...options });
  return rs;
}

async function until(condition: () => boolean, timeoutMs = 3000): Promise<number> {
  const start = Date.now();
  while (!condition()) {
    if (Date.now() - start > timeoutMs) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
  return Date.now() - start;
}

describe('resource server module', () => {
  it('answers a valid token from its cache without a round trip, and refuses an unknown one', async () => {
    await setup();
    await rs!.ready();
    fake.answers.set('tok-a', answer('j-a'));
    for (let i = 0; i < 20; i++) expect((await rs!.verify('tok-a'))?.username).toBe('alice');
    expect(fake.introspections).toBe(1);
    expect(await rs!.verify('tok-unknown')).toBeNull();
    expect(await rs!.verify('tok-unknown')).toBeNull();
    expect(fake.introspections).toBe(2); // the inactive answer is cached too, briefly
    expect(rs!.stats()).toMatchObject({ hits: 20, misses: 2, introspections: 2 });
  });

  it('joins concurrent requests for one token into one introspection', async () => {
    await setup();
    await rs!.ready();
    fake.answers.set('tok-a', answer('j-a'));
    await Promise.all(Array.from({ length: 10 }, () => rs!.verify('tok-a')));
    expect(fake.introspections).toBe(1);
  });

  it('refuses a refresh token presented as a bearer token', async () => {
    await setup();
    fake.answers.set('tok-r', answer('j-r', 'alice', 'app', { token_type: 'refresh_token' }));
    expect(await rs!.verify('tok-r')).toBeNull();
  });

  it.each([
    ['token', { scope: 'token', jti: 'j-a', username: 'alice', client_id: 'app' }, ['tok-a']],
    ['grant', { scope: 'grant', jti: 'j-a', grant_id: 'g1', username: 'alice', client_id: 'app' }, ['tok-a', 'tok-a2']],
    ['user', { scope: 'user', username: 'alice' }, ['tok-a', 'tok-a2', 'tok-a3']],
    ['user at a client', { scope: 'user', username: 'alice', client_id: 'app' }, ['tok-a', 'tok-a2']],
    ['client', { scope: 'client', client_id: 'app' }, ['tok-a', 'tok-a2', 'tok-b']],
  ] as const)('a %s event drops exactly the answers it covers, within a poll', async (_name, event, dropped) => {
    await setup();
    await rs!.ready();
    const tokens: Record<string, IntrospectionAnswer> = {
      'tok-a': answer('j-a'),
      'tok-a2': answer('j-a2'),
      'tok-a3': answer('j-a3', 'alice', 'other'),
      'tok-b': answer('j-b', 'bob'),
      'tok-c': answer('j-c', 'carol', 'other'),
    };
    for (const [t, a] of Object.entries(tokens)) {
      fake.answers.set(t, a);
      await rs!.verify(t);
    }
    expect(fake.introspections).toBe(5);
    for (const t of dropped) fake.answers.set(t, { active: false });
    const start = Date.now();
    await fake.emit(event);
    await until(() => rs!.stats().events === 1);
    expect(Date.now() - start).toBeLessThan(1000);
    for (const t of Object.keys(tokens)) expect(await rs!.verify(t), t).toEqual(dropped.includes(t as never) ? null : expect.objectContaining({ jti: tokens[t]!.jti }));
    expect(fake.introspections).toBe(5 + dropped.length);
    await until(() => fake.pending().length === 0); // acknowledged in the next poll
  });

  it('applies every revocation of a SET that carries several: each drops what it covers', async () => {
    await setup();
    await rs!.ready();
    const tokens: Record<string, IntrospectionAnswer> = {
      'tok-a': answer('j-a'),
      'tok-b': answer('j-b', 'bob'),
      'tok-b2': answer('j-b2', 'bob', 'other'),
      'tok-c': answer('j-c', 'carol', 'shop'),
      'tok-d': answer('j-d', 'dave'),
    };
    for (const [t, a] of Object.entries(tokens)) {
      fake.answers.set(t, a);
      await rs!.verify(t);
    }
    const dropped = ['tok-a', 'tok-b', 'tok-b2', 'tok-c'];
    for (const t of dropped) fake.answers.set(t, { active: false });
    await fake.emit([
      { scope: 'token', reason: 'revoked', jti: 'j-a', username: 'alice', client_id: 'app' },
      { scope: 'user', reason: 'revoked', username: 'bob' },
      { scope: 'client', reason: 'client_deleted', client_id: 'shop' },
    ]);
    await until(() => rs!.stats().events === 1);
    expect(rs!.stats()).toMatchObject({ events: 1, revocations: 3, dropped: 4 });
    for (const t of Object.keys(tokens)) expect(await rs!.verify(t), t).toEqual(dropped.includes(t) ? null : expect.objectContaining({ jti: tokens[t]!.jti }));
    expect(fake.introspections).toBe(5 + dropped.length);
    await until(() => fake.pending().length === 0);
  });

  it('a SET of 3 revocations signed by tokenctl (signSet, its JWKS) and pushed: verified, and each drops what it covers', async () => {
    const keys = new SigningKeys(new MemoryStore());
    await keys.ensureCurrent();
    const jwks = createServer((_req, res) => void keys.jwks().then((k) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(k))));
    await new Promise<void>((r) => jwks.listen(0, '127.0.0.1', r));
    const endpoint = createServer();
    try {
      await setup({ events: 'push', issuer: 'https://tokenctl.example', jwksUrl: `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks` });
      endpoint.on('request', rs!.pushHandler());
      await new Promise<void>((r) => endpoint.listen(0, '127.0.0.1', r));
      const tokens: Record<string, IntrospectionAnswer> = { 'tok-a': answer('j-a'), 'tok-b': answer('j-b', 'bob'), 'tok-c': answer('j-c', 'carol', 'shop'), 'tok-d': answer('j-d', 'dave') };
      for (const [t, a] of Object.entries(tokens)) {
        fake.answers.set(t, a);
        await rs!.verify(t);
      }
      const now = Date.now();
      const events: RevocationEvent[] = [
        { id: 'e-1', at: now - 20, reason: 'revoked', scope: 'token', jti: 'j-a', tokenType: 'access_token', grantId: 'g-a', username: 'alice', clientId: 'app' },
        { id: 'e-2', at: now - 10, reason: 'reuse_detected', scope: 'grant', jti: 'j-x', tokenType: 'refresh_token', grantId: 'g-b', username: 'bob', clientId: 'app' },
        { id: 'e-3', at: now, reason: 'client_deleted', scope: 'client', clientId: 'shop' },
      ];
      const set = await signSet({ id: 'e-1', events }, 'https://tokenctl.example', 'rs', await keys.current(), now);
      const pushed = await fetch(`http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/`, { method: 'POST', headers: { 'content-type': 'application/secevent+jwt' }, body: set });
      expect(pushed.status).toBe(202);
      expect(rs!.stats()).toMatchObject({ events: 1, revocations: 3, dropped: 3 });
      for (const t of ['tok-a', 'tok-b', 'tok-c']) fake.answers.set(t, { active: false });
      for (const t of Object.keys(tokens)) expect(await rs!.verify(t), t).toEqual(t === 'tok-d' ? expect.objectContaining({ jti: 'j-d' }) : null);
      expect(fake.introspections).toBe(4 + 3);
    } finally {
      endpoint.close();
      jwks.close();
    }
  });

  it('rejects a tokens-revoked SET without a non-empty revocations list, or with a malformed revocation: setErrs, nothing dropped', async () => {
    const clock = new ManualTimers(); // the poller pauses 1 s after a refused SET
    await setup({ onError: () => undefined, clock });
    await rs!.ready();
    fake.answers.set('tok-a', answer('j-a'));
    await rs!.verify('tok-a');
    const bad = [
      await fake.emit([], { payload: { revocations: [] } }),
      await fake.emit([], { payload: { scope: 'client', client_id: 'app' } }), // one revocation, not in a list
      await fake.emit([], { payload: { revocations: [{ scope: 'client', client_id: 'app' }, { client_id: 'app' }] } }),
      await fake.emit([], { payload: { revocations: [{ scope: 'token', jti: 42 }] } }),
    ];
    const reported = () => fake.polls.flatMap((p) => Object.keys((p['setErrs'] as object | undefined) ?? {}));
    await clock.runUntil(() => bad.every((j) => reported().includes(j)));
    for (const p of fake.polls) for (const e of Object.values((p['setErrs'] as Record<string, { err: string }> | undefined) ?? {})) expect(e.err).toBe('invalid_request');
    expect(rs!.stats()).toMatchObject({ events: 0, revocations: 0, dropped: 0, entries: 1 });
  });

  it('never caches the active answer of an introspection in flight when its revocation event arrives', async () => {
    await setup();
    await rs!.ready();
    fake.answers.set('tok-a', answer('j-a'));
    let release!: () => void;
    fake.holdIntrospection = new Promise((r) => (release = r));
    const pending = rs!.verify('tok-a');
    await until(() => fake.introspections === 1);
    // The server read the token as active; it is revoked and its event arrives before the answer.
    await fake.emit({ scope: 'token', jti: 'j-a', username: 'alice', client_id: 'app' });
    await until(() => rs!.stats().events === 1);
    fake.answers.set('tok-a', { active: false });
    fake.holdIntrospection = undefined;
    release();
    expect(await pending).toBeNull(); // asked again, and the server has the revocation by now
    expect(await rs!.verify('tok-a')).toBeNull();
    expect(fake.introspections).toBe(2);
  });

  it('while the event stream is down, trusts a cached answer only for fallbackMaxAgeMs, and recovers', async () => {
    const clock = new ManualTimers();
    await setup({ fallbackMaxAgeMs: 300, clock });
    await rs!.ready();
    fake.answers.set('tok-a', answer('j-a'));
    await rs!.verify('tok-a');
    fake.pollStatus = 503;
    await fake.emit({ scope: 'client', client_id: 'nobody' }); // wakes the long poll: the next one fails
    await until(() => !rs!.stats().streamUp);
    clock.advance(299);
    await rs!.verify('tok-a');
    expect(fake.introspections).toBe(1); // younger than 300 ms: served from the cache
    clock.advance(51);
    await rs!.verify('tok-a');
    expect(fake.introspections).toBe(2); // older than 300 ms: asked again
    await rs!.verify('tok-a');
    expect(fake.introspections).toBe(2); // young enough
    fake.answers.set('tok-a', { active: false });
    clock.advance(350);
    expect(await rs!.verify('tok-a')).toBeNull(); // a revocation whose event cannot arrive: refused within the fallback age
    expect(rs!.stats().streamUp).toBe(false); // the polls failed all along: the fallback, not an event, refused it
    fake.pollStatus = undefined;
    // Its back-off is at most 5 s: once that has passed, the next poll brings the stream up.
    await until(() => rs!.stats().streamUp || clock.sleeping > 0);
    clock.advance(5000);
    await until(() => rs!.stats().streamUp);
  });

  it('does not accept tokens before the stream is up for longer than the fallback age', async () => {
    const clock = new ManualTimers();
    await setup({ fallbackMaxAgeMs: 200, events: false, clock });
    fake.answers.set('tok-a', answer('j-a'));
    await rs!.verify('tok-a');
    clock.advance(199);
    await rs!.verify('tok-a');
    expect(fake.introspections).toBe(1);
    clock.advance(51);
    await rs!.verify('tok-a');
    expect(fake.introspections).toBe(2);
    expect(fake.polls).toHaveLength(0);
  });

  it('rejects a forged SET or one for another audience: reported in setErrs, nothing dropped, stream down', async () => {
    const errors: Error[] = [];
    const clock = new ManualTimers(); // the poller pauses 1 s after a refused SET
    await setup({ onError: (e) => errors.push(e), clock });
    await rs!.ready();
    fake.answers.set('tok-a', answer('j-a'));
    await rs!.verify('tok-a');
    const forged = await fake.emit({ scope: 'client', client_id: 'app' }, { forge: true });
    const other = await fake.emit({ scope: 'client', client_id: 'app' }, { audience: 'someone-else' });
    await clock.runUntil(() => fake.polls.some((p) => p['setErrs'] && Object.keys(p['setErrs'] as object).length === 2));
    const errs = fake.polls.find((p) => p['setErrs'] && Object.keys(p['setErrs'] as object).length === 2)!['setErrs'] as Record<string, { err: string }>;
    expect(errs[forged]!.err).toBe('invalid_key');
    expect(errs[other]!.err).toBe('invalid_audience');
    expect(rs!.stats().events).toBe(0);
    expect(errors.some((e) => e.name === 'SetRejected')).toBe(true);
  });

  it('refetches the JWKS for a SET signed with a rotated key', async () => {
    const clock = new ManualTimers();
    await setup({ clock });
    await rs!.ready();
    fake.answers.set('tok-a', answer('j-a'));
    await rs!.verify('tok-a');
    await fake.emit({ scope: 'user', username: 'nobody' }); // the first key is fetched
    await until(() => rs!.stats().events === 1);
    // Past the refetch interval (1 s): the module's clock moved on, sockets left real.
    clock.advance(1100);
    await fake.rotate(true);
    await fake.emit({ scope: 'token', jti: 'j-a' });
    await until(() => rs!.stats().events === 2);
    expect(rs!.stats().dropped).toBe(1);
  });

  it('introspection failures are IntrospectionUnavailable, never a pass', async () => {
    rs = new ResourceServer({ url: 'http://127.0.0.1:1', clientId: 'c', clientSecret: 's', events: false });
    fake = await startFakeTransmitter();
    await expect(rs.verify('tok')).rejects.toThrow(expect.objectContaining({ name: 'IntrospectionUnavailable' }));
  });
});

describe('the answer cache', () => {
  it('keeps an active answer until the earlier of exp and the maximum age, an inactive one briefly, and the most recently used', () => {
    const cache = new AnswerCache({ maxEntries: 2, maxAgeMs: 60_000, inactiveTtlMs: 1000 });
    const t0 = 1_000_000_000_000;
    cache.set('a', { active: true, exp: t0 / 1000 + 10 }, t0);
    expect(cache.get('a', t0 + 9_999)).toBeDefined();
    expect(cache.get('a', t0 + 10_000)).toBeUndefined();
    cache.set('b', { active: true, exp: t0 / 1000 + 3600 }, t0);
    expect(cache.get('b', t0 + 59_999)).toBeDefined();
    expect(cache.get('b', t0 + 60_000)).toBeUndefined();
    cache.set('i', { active: false }, t0);
    expect(cache.get('i', t0 + 999)).toBeDefined();
    expect(cache.get('i', t0 + 1000)).toBeUndefined();
    cache.set('x', { active: true }, t0);
    cache.set('y', { active: true }, t0);
    cache.get('x', t0);
    cache.set('z', { active: true }, t0);
    expect(cache.size).toBe(2);
    expect(cache.get('y', t0)).toBeUndefined(); // least recently used
    expect(cache.get('x', t0)).toBeDefined();
  });

  it('drops through its indexes exactly what a scan with covers() would', () => {
    const users = ['u1', 'u2', 'u3'];
    const clients = ['c1', 'c2'];
    for (let round = 0; round < 200; round++) {
      const cache = new AnswerCache({ maxEntries: 50, maxAgeMs: 60_000, inactiveTtlMs: 60_000 });
      const answers = new Map<string, IntrospectionAnswer>();
      for (let i = 0; i < 60; i++) {
        const a: IntrospectionAnswer = { active: Math.random() < 0.9, jti: `j${i % 40}`, username: users[i % 3], client_id: clients[(i >> 1) % 2] };
        cache.set(`k${i}`, a, 0);
        answers.set(`k${i}`, a);
      }
      const pick = <T,>(xs: T[]) => xs[Math.floor(Math.random() * xs.length)]!;
      const scope = pick(['token', 'grant', 'user', 'client'] as const);
      const event = { scope, jti: pick([`j${round % 45}`, undefined]), username: pick([...users, undefined]), client_id: pick([...clients, undefined]) };
      const kept = (k: string) => cache.get(k, 1) !== undefined;
      const before = [...answers.keys()].filter(kept);
      const expected = before.filter((k) => answers.get(k)!.active && covers(event, answers.get(k)!));
      expect(cache.drop(event)).toBe(expected.length);
      expect([...answers.keys()].filter(kept)).toEqual(before.filter((k) => !expected.includes(k)));
    }
  });

  it('covers: the rules of common.md', () => {
    const a = { active: true, jti: 'j', username: 'u', client_id: 'c' };
    expect(covers({ scope: 'token', jti: 'j' }, a)).toBe(true);
    expect(covers({ scope: 'token', jti: 'k' }, a)).toBe(false);
    expect(covers({ scope: 'grant', jti: 'k', username: 'u', client_id: 'c' }, a)).toBe(true);
    expect(covers({ scope: 'grant', jti: 'k', username: 'u', client_id: 'd' }, a)).toBe(false);
    expect(covers({ scope: 'user', username: 'u' }, a)).toBe(true);
    expect(covers({ scope: 'user', username: 'u', client_id: 'd' }, a)).toBe(false);
    expect(covers({ scope: 'client', client_id: 'c' }, a)).toBe(true);
    expect(covers({ scope: 'client', client_id: 'd' }, a)).toBe(false);
    expect(covers({ scope: 'everything' } as never, a)).toBe(true);
  });
});
