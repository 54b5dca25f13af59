import { describe, expect, it, vi } from 'vitest';
import { RowCache } from '../../src/store/sqlite/row-cache.js';
import type { ClientRecord, TokenRecord } from '../../src/store/store.js';
import { makeClient, makeToken } from '../helpers/records.js';

/** A cache on a clock of our own, a table of rows behind it, and a count of the reads that reached it. */
function setup(options: { maxTokens?: number } = {}) {
  let now = 1_000_000;
  const hits: boolean[] = [];
  const cache = new RowCache({ now: () => now, keepAfterQuietMs: 100, maxTokens: options.maxTokens, observer: { rowCache: (hit) => hits.push(hit) } });
  const clients = new Map<string, ClientRecord>();
  const tokens = new Map<string, TokenRecord>();
  const reads = { clients: 0, tokens: 0 };
  const readClient = (id: string) => {
    reads.clients++;
    const c = clients.get(id);
    return c ? { ...c } : null;
  };
  const readToken = (digest: string) => {
    reads.tokens++;
    const t = tokens.get(digest);
    return t ? { ...t } : null;
  };
  return {
    cache, clients, tokens, reads, hits,
    later: (ms: number) => (now += ms),
    client: (id: string) => cache.client(id, readClient),
    token: (digest: string) => cache.token(digest, readToken),
    /** How many times reading `digest` reached the table. */
    readsOf: (digest: string) => {
      const before = reads.tokens;
      cache.token(digest, readToken);
      return reads.tokens - before;
    },
  };
}

describe('RowCache', () => {
  it('keeps a client row from its first read, hands out copies, and keeps "no such client" too', () => {
    const c = setup();
    c.clients.set('a', makeClient({ id: 'a', name: 'first' }));
    c.cache.sync(1);
    const first = c.client('a')!;
    first.name = 'changed by the caller';
    expect(c.client('a')!.name).toBe('first');
    expect(c.client('nobody')).toBeNull();
    expect(c.client('nobody')).toBeNull();
    expect(c.reads.clients).toBe(2);
    expect(c.hits).toEqual([false, true, false, true]);
  });

  it('forgets every row when data_version moves, and client rows on forgetClients()', () => {
    const c = setup();
    c.clients.set('a', makeClient({ id: 'a', name: 'first' }));
    c.cache.sync(1);
    c.client('a');
    c.clients.set('a', makeClient({ id: 'a', name: 'second' }));
    c.cache.sync(1); // nobody committed: still the kept row
    expect(c.client('a')!.name).toBe('first');
    c.cache.sync(2); // another connection committed
    expect(c.client('a')!.name).toBe('second');
    c.clients.set('a', makeClient({ id: 'a', name: 'third' }));
    c.cache.forgetClients(); // this connection wrote the clients table
    expect(c.client('a')!.name).toBe('third');
  });

  it('keeps a token row on its second read lately, once the store has been quiet, and hands out that frozen row', () => {
    const c = setup();
    const t = makeToken();
    c.tokens.set(t.digest, t);
    c.cache.sync(1);
    // Just synced (the cache forgot everything): not quiet, every read reaches the table.
    expect([c.readsOf(t.digest), c.readsOf(t.digest)]).toEqual([1, 1]);
    c.later(100);
    // Quiet now: noted on the first read, kept on the second, answered from the cache after.
    expect([c.readsOf(t.digest), c.readsOf(t.digest), c.readsOf(t.digest)]).toEqual([1, 1, 0]);
    const kept = c.token(t.digest)!;
    expect(kept).toEqual(t);
    expect(() => (kept.scope = 'changed')).toThrow(TypeError);
    expect(c.hits.slice(-2)).toEqual([true, true]);
    expect(c.hits.filter((hit) => !hit)).toHaveLength(4);
  });

  it('keeps nothing read once only, and nothing not found', () => {
    const c = setup();
    c.cache.sync(1);
    c.later(1_000);
    const once = Array.from({ length: 50 }, () => makeToken());
    for (const t of once) c.tokens.set(t.digest, t);
    for (const t of once) expect(c.readsOf(t.digest)).toBe(1);
    for (let i = 0; i < 3; i++) expect(c.readsOf('made-up-digest-that-no-token-has')).toBe(1);
    expect(c.token('made-up-digest-that-no-token-has')).toBeNull();
  });

  it('forgets the token rows when data_version moves and on forgetTokens(), then waits for quiet again', () => {
    const c = setup();
    const t = makeToken();
    c.tokens.set(t.digest, t);
    c.cache.sync(1);
    c.later(1_000);
    c.token(t.digest);
    c.token(t.digest);
    expect(c.readsOf(t.digest)).toBe(0);
    c.tokens.set(t.digest, { ...t, revokedAt: 5 });
    c.cache.sync(2); // another connection's revocation
    expect(c.token(t.digest)!.revokedAt).toBe(5);
    c.later(1_000);
    c.token(t.digest);
    expect(c.readsOf(t.digest)).toBe(0);
    c.tokens.set(t.digest, { ...t, revokedAt: 6 });
    c.cache.forgetTokens(); // this connection's own write
    expect(c.token(t.digest)!.revokedAt).toBe(6);
    // Just forgotten: not kept again until the store has been quiet a while.
    expect([c.readsOf(t.digest), c.readsOf(t.digest)]).toEqual([1, 1]);
    c.later(100);
    expect([c.readsOf(t.digest), c.readsOf(t.digest)]).toEqual([1, 0]);
  });

  it('forgets the oldest kept row when full', () => {
    const c = setup({ maxTokens: 3 });
    c.cache.sync(1);
    c.later(1_000);
    const ts = Array.from({ length: 4 }, () => makeToken());
    for (const t of ts) c.tokens.set(t.digest, t);
    for (const t of ts) {
      c.token(t.digest);
      c.token(t.digest); // kept on the second read
    }
    // Newest first: reading the forgotten one keeps it again, and forgets the next oldest.
    expect([...ts].reverse().map((t) => c.readsOf(t.digest))).toEqual([0, 0, 0, 1]);
  });

  it('reads the clock of its options, not Date.now, once given one', () => {
    const spy = vi.spyOn(Date, 'now');
    try {
      const c = setup();
      c.later(1_000);
      c.cache.sync(1);
      c.cache.forgetTokens();
      c.client('a');
      expect(spy).not.toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
  });
});
