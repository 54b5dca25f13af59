import { describe, expect, it } from 'vitest';
import { ServiceUnavailableError } from '../../src/engine/errors.js';
import { FairLimiter } from '../../src/engine/fair-limiter.js';
import { deferred, flush } from '../helpers/engine.js';

/** A limiter under test, with tasks that run until released, and a log of which started. */
function harness(concurrency: number, maxQueuedPerKey = 8, maxQueued = 256) {
  const limiter = new FairLimiter(concurrency, maxQueuedPerKey, maxQueued);
  const started: string[] = [];
  const releases = new Map<string, () => void>();
  let running = 0;
  let maxRunning = 0;
  function submit(key: string, name: string): Promise<string> {
    return limiter.run(key, async () => {
      started.push(name);
      running++;
      maxRunning = Math.max(maxRunning, running);
      const gate = deferred();
      releases.set(name, () => gate.resolve());
      await gate.promise;
      running--;
      return name;
    });
  }
  async function release(name: string): Promise<void> {
    const r = releases.get(name);
    if (!r) throw new Error(`${name} has not started`);
    r();
    await flush();
  }
  return { limiter, submit, release, started, stats: () => ({ running, maxRunning }) };
}

describe('FairLimiter', () => {
  it('runs at most `concurrency` tasks at once, and every task in the end', async () => {
    const h = harness(2);
    const all = ['a1', 'a2', 'a3', 'b1', 'b2'].map((n) => h.submit(n[0]!, n));
    await flush();
    expect(h.started).toEqual(['a1', 'a2']);
    for (let i = 0; i < 5; i++) await h.release(h.started[i]!);
    expect(await Promise.all(all)).toEqual(['a1', 'a2', 'a3', 'b1', 'b2']);
    expect(h.stats().maxRunning).toBe(2);
    expect(h.started).toHaveLength(5);
  });

  it('serves waiting keys round-robin, so one busy key cannot starve another', async () => {
    const h = harness(1);
    void h.submit('x', 'x1');
    await flush();
    for (const n of ['a1', 'a2', 'a3', 'b1', 'b2', 'c1']) void h.submit(n[0]!, n);
    await flush();
    for (let i = 0; i < 6; i++) await h.release(h.started[i]!);
    expect(h.started).toEqual(['x1', 'a1', 'b1', 'c1', 'a2', 'b2', 'a3']);
  });

  it('refuses at once with ServiceUnavailableError when a key\'s queue is full; other keys still queue', async () => {
    const h = harness(1, 2);
    void h.submit('a', 'a1'); // runs
    void h.submit('a', 'a2'); // queued
    void h.submit('a', 'a3'); // queued: the queue of 'a' is full
    await flush();
    await expect(h.submit('a', 'a4')).rejects.toBeInstanceOf(ServiceUnavailableError);
    const b = h.submit('b', 'b1');
    await h.release('a1');
    await h.release('a2');
    await h.release('b1');
    await expect(b).resolves.toBe('b1');
    expect(h.started).toEqual(['a1', 'a2', 'b1', 'a3']);
  });

  it('refuses when all keys together have maxQueued waiting', async () => {
    const h = harness(1, 8, 2);
    void h.submit('a', 'a1');
    void h.submit('b', 'b1');
    void h.submit('c', 'c1');
    await flush();
    await expect(h.submit('d', 'd1')).rejects.toBeInstanceOf(ServiceUnavailableError);
  });

  it('a task that fails frees its slot for the next', async () => {
    const limiter = new FairLimiter(1, 8, 256);
    const failing = limiter.run('a', async () => {
      throw new Error('boom');
    });
    const next = limiter.run('b', async () => 'ok');
    await expect(failing).rejects.toThrow('boom');
    await expect(next).resolves.toBe('ok');
    // and the limiter is idle again: a new task starts at once
    await expect(limiter.run('c', async () => 'again')).resolves.toBe('again');
  });

  it('a key whose queue emptied may queue again up to its limit', async () => {
    const h = harness(1, 1);
    void h.submit('a', 'a1');
    void h.submit('a', 'a2');
    await flush();
    await expect(h.submit('a', 'a3')).rejects.toBeInstanceOf(ServiceUnavailableError);
    await h.release('a1'); // a2 runs, the queue of 'a' is empty
    void h.submit('a', 'a4');
    await flush();
    await expect(h.submit('a', 'a5')).rejects.toBeInstanceOf(ServiceUnavailableError);
  });
});
