import { afterEach, describe, expect, it } from 'vitest';
import { createClient, DOORS, issue, specBasic, startTestServer, type TestServer } from '../helpers/server.js';

/** One refresh token cannot mint access tokens without bound (serve --max-refreshes-per-minute; SECURITY.md). */
describe.each(DOORS)('refreshes of one refresh token per minute, through the %s', (door) => {
  let s: TestServer | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  it('past the limit: 429 with Retry-After and the error record, nothing minted; the next minute it works again', async () => {
    s = await startTestServer({ maxRefreshesPerMinute: 4, door });
    const client = await createClient(s.engine, 'app');
    const issued = await issue(s.engine, client);
    const refresh = () => s!.post('/oauth/token', { grant_type: 'refresh_token', refresh_token: issued.refresh_token }, { authorization: specBasic(client) });
    // The grant's own two tokens count: two refreshes fill the minute.
    expect((await refresh()).status).toBe(200);
    expect((await refresh()).status).toBe(200);
    const limited = await refresh();
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('60');
    expect(limited.headers.get('cache-control')).toBe('no-store');
    expect(limited.json).toEqual({ error: 'temporarily_unavailable', error_description: expect.stringMatching(/4 times in the last minute/) });
    expect(JSON.stringify(limited.json)).not.toContain(issued.refresh_token);
    expect(await s.engine.listTokens({ type: 'access_token' })).toHaveLength(3);
    s.clock.advance(60_000);
    expect((await refresh()).status).toBe(200);
  });
});
