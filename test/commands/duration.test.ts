import { describe, expect, it } from 'vitest';
import { MAX_LIFETIME_MS, parseDuration } from '../../src/cli/duration.js';
import { createClient, tempStore } from '../helpers/cli.js';

describe('durations', () => {
  it('m is minutes; M is refused as ambiguous, other capitals as not lower case', () => {
    expect(parseDuration('1m')).toBe(60_000);
    expect(() => parseDuration('1M')).toThrow(/M could mean minutes or months: write m for minutes/);
    expect(() => parseDuration('2H')).toThrow(/units are lower case \(h\)/);
  });

  it('a lifetime is at most 366d; any duration at most 100 years', () => {
    expect(parseDuration('366d', MAX_LIFETIME_MS)).toBe(MAX_LIFETIME_MS);
    expect(() => parseDuration('367d', MAX_LIFETIME_MS)).toThrow(/the longest accepted is 366d/);
    expect(() => parseDuration('99999999d')).toThrow(/the longest accepted is 36525d/);
  });

  it('status --url --interval is a duration like the others: a bare number and less than 1s are refused (exit 2)', async () => {
    const store = tempStore({ inProcess: true });
    try {
      const [bare, short] = await Promise.all([
        store.run(['status', '--url', 'http://127.0.0.1:9/metrics', '--interval', '5']),
        store.run(['status', '--url', 'http://127.0.0.1:9/metrics', '--interval', '500ms']),
      ]);
      expect(bare.code).toBe(2);
      expect(bare.stderr).toMatch(/--interval: "5" is not a duration: use a number with a unit/);
      expect(short.code).toBe(2);
      expect(short.stderr).toMatch(/--interval 500ms: at least 1s/);
    } finally {
      store.cleanup();
    }
  });

  it('the CLI refuses --access-ttl 1M and --refresh-ttl 99999999d with exit 2', async () => {
    const store = tempStore({ inProcess: true });
    try {
      const { id } = await createClient(store);
      const [month, huge] = await Promise.all([
        store.run(['token', 'issue', '--client', id, '--user', 'u', '--access-ttl', '1M']),
        store.run(['token', 'issue', '--client', id, '--user', 'u', '--refresh-ttl', '99999999d']),
      ]);
      expect(month.code).toBe(2);
      expect(month.stderr).toMatch(/--access-ttl: "1M" is not accepted as a duration: M could mean minutes or months/);
      expect(huge.code).toBe(2);
      expect(huge.stderr).toMatch(/the longest accepted is 366d/);
    } finally {
      store.cleanup();
    }
  });
});
