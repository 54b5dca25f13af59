import { afterEach, describe, expect, it } from 'vitest';
import { ROTATION_RACE_WINDOW_MS } from '../../src/engine/context.js';
import { createClient, DOORS, formAuth, issue, SECOND, specBasic, startTestServer, type Client, type TestServer } from '../helpers/server.js';



/** `serve --rotate-refresh-tokens` and `--refresh-grace` over HTTP (contract 3, RFC 9700 §4.14.2). */
describe.each(DOORS)('refresh token rotation over HTTP, through the %s', (door) => {
  let s: TestServer | undefined;
  let client: Client;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  async function start(options: { rotateRefreshTokens: boolean; refreshGraceMs?: number }) {
    s = await startTestServer({ ...options, door });
    client = await createClient(s.engine, 'app');
    return s;
  }
  const refresh = (token: string) => s!.post('/oauth/token', { grant_type: 'refresh_token', refresh_token: token }, { authorization: specBasic(client) });
  const active = async (token: string) =>
    (await s!.post('/oauth/introspection', { token, token_type_hint: 'refresh_token', ...formAuth(client) })).json.active;

  it('each refresh returns a new refresh token; the replaced one is no longer active', async () => {
    await start({ rotateRefreshTokens: true });
    const issued = await issue(s!.engine, client);
    const r1 = await refresh(issued.refresh_token);
    expect(r1.status, r1.text).toBe(200);
    expect(r1.json.refresh_token).not.toBe(issued.refresh_token);
    expect(await active(issued.refresh_token)).toBe(false);
    expect(await active(r1.json.refresh_token as string)).toBe(true);
    const r2 = await refresh(r1.json.refresh_token as string);
    expect(r2.status).toBe(200);
  });

  it('reuse of a replaced refresh token, past the rotation race window: 401 invalid_token and the whole grant is revoked', async () => {
    await start({ rotateRefreshTokens: true });
    const issued = await issue(s!.engine, client);
    const r1 = await refresh(issued.refresh_token);
    s!.clock.advance(ROTATION_RACE_WINDOW_MS + 1); // past the rotation race window: reuse, not a lost race
    const reuse = await refresh(issued.refresh_token);
    expect(reuse.status).toBe(401);
    expect(reuse.json).toEqual({ error: 'invalid_token', error_description: expect.stringMatching(/revoked/) });
    expect(await active(r1.json.refresh_token as string)).toBe(false);
    expect(await active(r1.json.access_token as string)).toBe(false);
    expect((await refresh(r1.json.refresh_token as string)).status).toBe(401);
  });

  it('concurrent refreshes of one token: exactly one succeeds', async () => {
    await start({ rotateRefreshTokens: true });
    const issued = await issue(s!.engine, client);
    // The client's password is verified once first so that the eight requests race on the token, not on scrypt.
    await refresh((await issue(s!.engine, client)).refresh_token);
    const answers = await Promise.all(Array.from({ length: 8 }, () => refresh(issued.refresh_token)));
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses.filter((x) => x === 200)).toHaveLength(1);
    expect(statuses.filter((x) => x === 401)).toHaveLength(7);
    for (const a of answers.filter((x) => x.status === 401)) expect(a.json.error).toBe('invalid_token');
  });

  it('without rotation, concurrent refreshes all succeed and keep the refresh token', async () => {
    await start({ rotateRefreshTokens: false });
    const issued = await issue(s!.engine, client);
    await refresh(issued.refresh_token); // the password verified once, then served from the cache
    const answers = await Promise.all(Array.from({ length: 8 }, () => refresh(issued.refresh_token)));
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    expect(new Set(answers.map((a) => a.json.refresh_token))).toEqual(new Set([issued.refresh_token]));
    expect(new Set(answers.map((a) => a.json.jti)).size).toBe(8);
  });

  describe('--refresh-grace', () => {
    it('the immediately previous token works again within the grace, and its lost replacement is retired', async () => {
      await start({ rotateRefreshTokens: true, refreshGraceMs: 10 * SECOND });
      const issued = await issue(s!.engine, client);
      const lost = await refresh(issued.refresh_token); // the client never saw this answer
      s!.clock.advance(9 * SECOND);
      const retry = await refresh(issued.refresh_token);
      expect(retry.status, retry.text).toBe(200);
      expect(retry.json.refresh_token).not.toBe(lost.json.refresh_token);
      expect(await active(lost.json.refresh_token as string)).toBe(false);
      expect(await active(retry.json.refresh_token as string)).toBe(true);
    });

    it('after the grace, the previous token is reuse: the grant is revoked', async () => {
      await start({ rotateRefreshTokens: true, refreshGraceMs: 10 * SECOND });
      const issued = await issue(s!.engine, client);
      const next = await refresh(issued.refresh_token);
      s!.clock.advance(10 * SECOND + 1);
      expect((await refresh(issued.refresh_token)).status).toBe(401);
      expect(await active(next.json.refresh_token as string)).toBe(false);
    });

    it('never a token two generations old, even within the grace', async () => {
      await start({ rotateRefreshTokens: true, refreshGraceMs: 10 * SECOND });
      const issued = await issue(s!.engine, client);
      const gen1 = await refresh(issued.refresh_token);
      const gen2 = await refresh(gen1.json.refresh_token as string);
      expect(gen2.status).toBe(200);
      s!.clock.advance(ROTATION_RACE_WINDOW_MS + 1); // past the rotation race window: reuse, not a lost race
      const old = await refresh(issued.refresh_token);
      expect(old.status).toBe(401);
      expect(await active(gen2.json.refresh_token as string)).toBe(false);
    });

    it('not once the replacement has itself been used', async () => {
      await start({ rotateRefreshTokens: true, refreshGraceMs: 10 * SECOND });
      const issued = await issue(s!.engine, client);
      const gen1 = await refresh(issued.refresh_token);
      await refresh(gen1.json.refresh_token as string);
      expect((await refresh(issued.refresh_token)).status).toBe(401);
    });
  });
});
