import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSpecAuthorization } from '../../src/engine/client-auth.js';
import { Engine } from '../../src/engine/engine.js';
import type { TokenResponse } from '../../src/engine/results.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { tokenctl } from '../helpers/cli.js';
import { killAllChildren, post, startServe, SystemTimeClock, tempDir, type ServeProcess } from '../helpers/load.js';

/**
 * One store, many processes: a running `tokenctl serve` and CLI commands (separate processes) on
 * one SQLite file. Whatever the CLI changes, the server's very next answer reflects: no cache in
 * the server (of tokens, of client records or of verified passwords) may answer from before the
 * change. Each step first makes the server remember the old state (a verified password, an
 * active token), then changes it from the CLI, then asks the server once.
 */

const CONF = 'mp-conf';
const CONF_SECRET = 'mp-conf-password-0123456789';
const DOOMED = 'mp-doomed';
const DOOMED_SECRET = 'mp-doomed-password-0123456789';
const PUB = 'mp-pub';
const PUB_DOOMED = 'mp-pub-doomed';

describe('a running server and CLI processes on one SQLite file', { timeout: 60_000 }, () => {
  const tmp = tempDir('tokenctl-mp-');
  const db = join(tmp.dir, 'tokens.db');
  let server: ServeProcess;
  let url: string;
  const g: Record<string, TokenResponse> = {};
  const cli = async (args: string[]) => {
    const r = await tokenctl([...args, '--db', db, '--json'], { timeoutMs: 20_000 });
    expect(r.code, r.stderr).toBe(0);
    return r.json<Record<string, unknown>>();
  };
  const introspect = (token: string, creds: Record<string, string> = { client_id: PUB }) =>
    post(`${url}/oauth/introspection`, { token, token_type_hint: 'access_token', ...creds });
  const refresh = (token: string, clientId: string, secret?: string) =>
    post(`${url}/oauth/token`, { grant_type: 'refresh_token', refresh_token: token }, { authorization: buildSpecAuthorization(clientId, secret) });

  beforeAll(async () => {
    const store = await SqliteStore.open(db);
    try {
      const engine = new Engine({ store, clock: new SystemTimeClock() });
      await engine.createClient({ id: CONF, name: CONF, secret: CONF_SECRET }, 'cli:test');
      await engine.createClient({ id: DOOMED, name: DOOMED, secret: DOOMED_SECRET }, 'cli:test');
      await engine.createClient({ id: PUB, name: PUB, public: true }, 'cli:test');
      await engine.createClient({ id: PUB_DOOMED, name: PUB_DOOMED, public: true }, 'cli:test');
      for (const [name, clientId, username] of [
        ['one', CONF, 'alice'],
        ['two', CONF, 'alice'],
        ['bob1', CONF, 'bob'],
        ['bob2', CONF, 'bob'],
        ['doomed', DOOMED, 'carol'],
        ['pubDoomed', PUB_DOOMED, 'dave'],
      ] as const) {
        g[name] = await engine.issue({ clientId, username });
      }
    } finally {
      await store.close();
    }
    server = await startServe(['--db', db, '--log-level', 'warn']);
    url = server.url;
  }, 60_000);

  afterAll(async () => {
    await server?.kill('SIGTERM');
    await killAllChildren();
    tmp.cleanup();
  });

  it('a revocation from the CLI (token, jti, user) is seen by the very next introspection and refresh', async () => {
    const one = g.one!;
    expect((await introspect(one.refresh_token)).body).toMatchObject({ active: true });
    expect((await introspect(one.access_token)).body).toMatchObject({ active: true });
    expect((await refresh(one.refresh_token, CONF, CONF_SECRET)).status).toBe(200);

    expect(await cli(['revoke', one.refresh_token])).toMatchObject({ code: 'token_revoke_success' });
    expect((await introspect(one.refresh_token)).body).toEqual({ active: false });
    expect((await introspect(one.access_token)).body).toEqual({ active: false });
    const refused = await refresh(one.refresh_token, CONF, CONF_SECRET);
    expect(refused.status).toBe(401);
    expect(refused.body).toMatchObject({ error: 'invalid_token' });

    const two = g.two!;
    expect((await introspect(two.access_token)).body).toMatchObject({ active: true });
    expect(await cli(['revoke', '--jti', two.jti, '--yes'])).toMatchObject({ revoked: 1 });
    expect((await introspect(two.access_token)).body).toEqual({ active: false });
    expect((await introspect(two.refresh_token)).body).toMatchObject({ active: true });

    const bob = [g.bob1!, g.bob2!].flatMap((t) => [t.access_token, t.refresh_token]);
    for (const t of bob) expect((await introspect(t)).body).toMatchObject({ active: true });
    expect(await cli(['revoke', '--user', 'bob', '--yes'])).toMatchObject({ revoked: 4 });
    for (const t of bob) expect((await introspect(t)).body).toEqual({ active: false });
  });

  it('a secret rotated from the CLI stops working at once, though the server had verified it', async () => {
    const form = (secret: string) => ({ client_id: CONF, client_secret: secret });
    const two = g.two!;
    // The server verifies (and remembers) the old password on every endpoint and both header forms.
    expect((await introspect(two.refresh_token, form(CONF_SECRET))).status).toBe(200);
    expect((await refresh(two.refresh_token, CONF, CONF_SECRET)).status).toBe(200);
    expect((await post(`${url}/oauth/revocation`, { token: 'tca_unknown', token_type_hint: 'access_token', ...form(CONF_SECRET) })).status).toBe(200);

    const rotated = await cli(['client', 'rotate-secret', CONF, '--yes']);
    const fresh = rotated.client_secret as string;
    expect(fresh).not.toBe(CONF_SECRET);

    const old = await introspect(two.refresh_token, form(CONF_SECRET));
    expect(old.status).toBe(401);
    expect(old.body).toMatchObject({ status: 401, error: 'Unauthorized', path: '/oauth/introspection' });
    expect((await refresh(two.refresh_token, CONF, CONF_SECRET)).body).toMatchObject({ error: 'invalid_client' });
    expect((await post(`${url}/oauth/revocation`, { token: two.access_token, token_type_hint: 'access_token', ...form(CONF_SECRET) })).status).toBe(401);

    expect((await introspect(two.refresh_token, form(fresh))).body).toMatchObject({ active: true });
    expect((await refresh(two.refresh_token, CONF, fresh)).status).toBe(200);
  });

  it('a client deleted from the CLI stops working at once, and its tokens with it', async () => {
    const doomed = g.doomed!;
    const creds = { client_id: DOOMED, client_secret: DOOMED_SECRET };
    expect((await introspect(doomed.access_token, creds)).body).toMatchObject({ active: true });
    expect((await refresh(doomed.refresh_token, DOOMED, DOOMED_SECRET)).status).toBe(200);
    const pubDoomed = g.pubDoomed!;
    expect((await introspect(pubDoomed.access_token, { client_id: PUB_DOOMED })).body).toMatchObject({ active: true });
    expect((await refresh(pubDoomed.refresh_token, PUB_DOOMED)).status).toBe(200);

    await cli(['client', 'delete', DOOMED, '--yes']);
    await cli(['client', 'delete', PUB_DOOMED, '--yes']);

    expect((await introspect(doomed.access_token, creds)).status).toBe(401);
    expect((await refresh(doomed.refresh_token, DOOMED, DOOMED_SECRET)).body).toMatchObject({ error: 'invalid_client' });
    expect((await introspect(pubDoomed.access_token, { client_id: PUB_DOOMED })).status).toBe(401);
    expect((await refresh(pubDoomed.refresh_token, PUB_DOOMED)).body).toMatchObject({ error: 'invalid_client' });
    // Seen by a client that still exists: the deleted client's tokens are gone.
    for (const t of [doomed.access_token, doomed.refresh_token, pubDoomed.access_token]) {
      expect((await introspect(t)).body).toEqual({ active: false });
    }
  });
});
