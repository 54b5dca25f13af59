import { describe, expect, it } from 'vitest';
import { drain } from '../../src/serve/drain.js';
import { ManualTimers } from '../helpers/timers.js';

/** Contract 6's drain, on a manual clock: not ready at once, still serving for the drain time. */
describe('drain', () => {
  const never = new Promise<void>(() => undefined);

  it('marks the node not ready at once and resolves only when the drain time is over', async () => {
    const timers = new ManualTimers();
    let notReady = 0;
    let over = false;
    const draining = drain(() => notReady++, 5_000, never, timers).then(() => (over = true));
    expect(notReady).toBe(1);
    await timers.advance(4_999);
    await Promise.resolve();
    expect(over).toBe(false);
    await timers.advance(1);
    await draining;
    expect(over).toBe(true);
  });

  it('0: no drain time, only the mark', async () => {
    const timers = new ManualTimers();
    let notReady = 0;
    await drain(() => notReady++, 0, never, timers);
    expect(notReady).toBe(1);
    expect(timers.size).toBe(0);
  });

  it('a second signal ends the drain at once, and its timer is cleared', async () => {
    const timers = new ManualTimers();
    let skip = (): void => undefined;
    const skipped = new Promise<void>((resolve) => (skip = resolve));
    const draining = drain(() => undefined, 60_000, skipped, timers);
    expect(timers.size).toBe(1);
    skip();
    await draining;
    expect(timers.size).toBe(0);
  });
});
