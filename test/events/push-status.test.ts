import { describe, expect, it } from 'vitest';
import { judge } from '../../src/events/push.js';

/** What a push receiver's answer means (RFC 8935 §2.2, §2.3; contract 7: any 2xx is a delivery). */
describe('a push receiver’s answer', () => {
  it.each([200, 201, 202, 204, 299])('%i is a delivery', (status) => {
    expect(judge(status, '')).toEqual({ kind: 'accepted' });
  });

  it('400 with an RFC 8935 error is this SET refused for good; other answers are retried', () => {
    expect(judge(400, JSON.stringify({ err: 'invalid_key', description: 'unknown kid' }))).toEqual({ kind: 'rejected', error: 'HTTP 400 invalid_key: unknown kid' });
    for (const [status, body] of [[400, 'nope'], [301, ''], [401, ''], [429, ''], [500, ''], [503, '']] as const) {
      expect(judge(status, body).kind, String(status)).toBe('failed');
    }
  });
});
