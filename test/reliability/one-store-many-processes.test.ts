import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSpecAuthorization } from '../../src/engine/client-auth.js';
import { Engine } from '../../src/engine/engine.js';
import type { TokenResponse } from '../../src/engine/results.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { tokenctl } from '../helpers/cli.js';
import { killAllChildren, pinConnections, postOnce, startServe, SystemTimeClock, tempDir, type PinnedConnection, type ServeProcess } from '../helpers/load.js';

/**
 * One store, many processes: a running `tokenctl serve` and CLI commands (separate processes) on
 * one SQLite file. Whatever the CLI changes, the server's very next answer reflects: no cache in
 * the server (of tokens, of client records or of verified passwords) may answer from before the
 * change. Each step first makes the server remember the old state (a verified password, an
 * active token), then changes it from the CLI, then asks the server once.
 *
 * Run with one process and with `serve --workers 2`. With workers, every step is done on one
 * keep-alive connection per worker (pinConnections: which worker answers a connection is known
 * from the pid in its request log line, nothing in an answer shows it): each worker is made to
 * remember the old state, in its own memory (the authenticator's verified passwords are per
 * process), and after the change each worker's very next answer is checked.
 */

const CONF = 'mp-conf';
const CONF_SECRET = 'mp-conf-password-0123456789';
/** A resource server: a confidential client no test changes, which may introspect every token. */
const RS = 'mp-rs';
const RS_SECRET = 'mp-rs-password-0123456789';
const DOOMED = 'mp-doomed';
const DOOMED_SECRET = 'mp-doomed-password-0123456789';
const PUB = 'mp-pub';
const PUB_DOOMED = 'mp-pub-doomed';

describe.each([1, 2])('a running server (--workers %i) and CLI processes on one SQLite file', { timeout: 60_000 }, (workers) => {
  const tmp = tempDir('tokenctl-mp-');
  const db = join(tmp.dir, 'tokens.db');
  let server: ServeProcess;
  /** One connection per process that answers requests: the primary alone, or each worker. */
  let conns: PinnedConnection[];
  const g: Record<string, TokenResponse> = {};
  const cli = async (args: string[]) => {
    const r = await tokenctl([...args, '--db', db, '--json'], { timeoutMs: 20_000 });
    expect(r.code, r.stderr).toBe(0);
    return r.json<Record<string, unknown>>();
  };
  // As a resource server (confidential): a public client would see only its own tokens.
  const introspect = (via: PinnedConnection, token: string, creds: Record<string, string> = { client_id: RS, client_secret: RS_SECRET }) =>
    via.post('/oauth/introspection', { token, token_type_hint: 'access_token', ...creds });
  const refresh = (via: PinnedConnection, token: string, clientId: string, secret?: string) =>
    via.post('/oauth/token', { grant_type: 'refresh_token', refresh_token: token }, { authorization: buildSpecAuthorization(clientId, secret) });
  const revoke = (via: PinnedConnection, token: string, creds: Record<string, string>) =>
    via.post('/oauth/revocation', { token, token_type_hint: 'access_token', ...creds });

  beforeAll(async () => {
    const store = await SqliteStore.open(db);
    try {
      const engine = new Engine({ store, clock: new SystemTimeClock() });
      await engine.createClient({ id: CONF, name: CONF, secret: CONF_SECRET }, 'cli:test');
      await engine.createClient({ id: RS, name: RS, secret: RS_SECRET }, 'cli:test');
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
        ['http0', PUB, 'erin'],
        ['http1', PUB, 'erin'],
      ] as const) {
        g[name] = await engine.issue({ clientId, username });
      }
    } finally {
      await store.close();
    }
    // At info: the request log lines name the process that answered.
    server = await startServe(['--db', db, '--log-level', 'info', '--workers', String(workers)]);
    conns = await pinConnections(server, workers);
  }, 60_000);

  afterAll(async () => {
    for (const c of conns ?? []) c.close();
    await server?.kill('SIGTERM');
    await killAllChildren();
    tmp.cleanup();
  });

  it(`the pinned connections reach ${workers} distinct serving process(es), the primary only without workers`, () => {
    const pids = conns.map((c) => c.pid);
    expect(new Set(pids).size).toBe(workers);
    // With workers, the primary only hands connections on; without, it answers itself.
    if (workers === 1) expect(pids).toEqual([server.child.pid]);
    else expect(pids).not.toContain(server.child.pid);
  });

  it('a revocation from the CLI (token, jti, user) is seen by the very next introspection and refresh', async () => {
    const one = g.one!;
    for (const c of conns) {
      expect((await introspect(c, one.refresh_token)).body).toMatchObject({ active: true });
      expect((await introspect(c, one.access_token)).body).toMatchObject({ active: true });
      expect((await refresh(c, one.refresh_token, CONF, CONF_SECRET)).status).toBe(200);
    }

    expect(await cli(['revoke', one.refresh_token])).toMatchObject({ code: 'token_revoke_success' });
    for (const c of conns) {
      expect((await introspect(c, one.refresh_token)).body, `process ${c.pid}`).toEqual({ active: false });
      expect((await introspect(c, one.access_token)).body, `process ${c.pid}`).toEqual({ active: false });
      const refused = await refresh(c, one.refresh_token, CONF, CONF_SECRET);
      expect(refused.status, `process ${c.pid}`).toBe(401);
      expect(refused.body).toMatchObject({ error: 'invalid_token' });
    }

    const two = g.two!;
    for (const c of conns) expect((await introspect(c, two.access_token)).body).toMatchObject({ active: true });
    expect(await cli(['revoke', '--jti', two.jti, '--yes'])).toMatchObject({ revoked: 1 });
    for (const c of conns) {
      expect((await introspect(c, two.access_token)).body, `process ${c.pid}`).toEqual({ active: false });
      expect((await introspect(c, two.refresh_token)).body, `process ${c.pid}`).toMatchObject({ active: true });
    }

    const bob = [g.bob1!, g.bob2!].flatMap((t) => [t.access_token, t.refresh_token]);
    for (const c of conns) for (const t of bob) expect((await introspect(c, t)).body).toMatchObject({ active: true });
    expect(await cli(['revoke', '--user', 'bob', '--yes'])).toMatchObject({ revoked: 4 });
    for (const c of conns) for (const t of bob) expect((await introspect(c, t)).body, `process ${c.pid}`).toEqual({ active: false });
  });

  it('a revocation acknowledged over HTTP by one process is seen by the very next request to every other', async () => {
    // Each process in turn revokes; the others (and fresh connections, which the primary hands
    // to the workers in turn) are asked right after the acknowledgement, each once.
    for (const [i, revoker] of conns.entries()) {
      const grant = g[`http${i}`]!;
      for (const c of conns) expect((await introspect(c, grant.access_token)).body).toMatchObject({ active: true, jti: grant.jti });
      expect((await revoke(revoker, grant.access_token, { client_id: PUB })).body).toMatchObject({ code: 'token_revoke_success' });
      for (const c of [...conns.filter((c) => c !== revoker), revoker]) {
        expect((await introspect(c, grant.access_token)).body, `revoked by ${revoker.pid}, asked ${c.pid}`).toEqual({ active: false });
      }
      const fresh = await Promise.all(Array.from({ length: 4 }, () => postOnce(`${server.url}/oauth/introspection`, { token: grant.access_token, token_type_hint: 'access_token', client_id: PUB })));
      for (const r of fresh) expect(r.body).toEqual({ active: false });
      // The rest of the grant lives on, on every process.
      for (const c of conns) expect((await introspect(c, grant.refresh_token)).body).toMatchObject({ active: true });
    }
  });

  it('a secret rotated from the CLI stops working at once, though every process had verified it', async () => {
    const form = (secret: string) => ({ client_id: CONF, client_secret: secret });
    const two = g.two!;
    // Each process verifies (and remembers) the old password on every endpoint and both header forms.
    for (const c of conns) {
      expect((await introspect(c, two.refresh_token, form(CONF_SECRET))).status).toBe(200);
      expect((await refresh(c, two.refresh_token, CONF, CONF_SECRET)).status).toBe(200);
      expect((await c.post('/oauth/revocation', { token: 'tca_unknown', token_type_hint: 'access_token', ...form(CONF_SECRET) })).status).toBe(200);
    }

    const rotated = await cli(['client', 'rotate-secret', CONF, '--yes']);
    const fresh = rotated.client_secret as string;
    expect(fresh).not.toBe(CONF_SECRET);

    for (const c of conns) {
      const old = await introspect(c, two.refresh_token, form(CONF_SECRET));
      expect(old.status, `process ${c.pid}`).toBe(401);
      expect(old.body).toMatchObject({ status: 401, error: 'Unauthorized', path: '/oauth/introspection' });
      expect((await refresh(c, two.refresh_token, CONF, CONF_SECRET)).body, `process ${c.pid}`).toMatchObject({ error: 'invalid_client' });
      expect((await revoke(c, two.access_token, form(CONF_SECRET))).status, `process ${c.pid}`).toBe(401);
    }
    for (const c of conns) {
      expect((await introspect(c, two.refresh_token, form(fresh))).body).toMatchObject({ active: true });
      expect((await refresh(c, two.refresh_token, CONF, fresh)).status).toBe(200);
    }
  });

  it('a client deleted from the CLI stops working at once on every process, and its tokens with it', async () => {
    const doomed = g.doomed!;
    const creds = { client_id: DOOMED, client_secret: DOOMED_SECRET };
    const pubDoomed = g.pubDoomed!;
    for (const c of conns) {
      expect((await introspect(c, doomed.access_token, creds)).body).toMatchObject({ active: true });
      expect((await refresh(c, doomed.refresh_token, DOOMED, DOOMED_SECRET)).status).toBe(200);
      expect((await introspect(c, pubDoomed.access_token, { client_id: PUB_DOOMED })).body).toMatchObject({ active: true });
      expect((await refresh(c, pubDoomed.refresh_token, PUB_DOOMED)).status).toBe(200);
    }

    await cli(['client', 'delete', DOOMED, '--yes']);
    await cli(['client', 'delete', PUB_DOOMED, '--yes']);

    for (const c of conns) {
      expect((await introspect(c, doomed.access_token, creds)).status, `process ${c.pid}`).toBe(401);
      expect((await refresh(c, doomed.refresh_token, DOOMED, DOOMED_SECRET)).body, `process ${c.pid}`).toMatchObject({ error: 'invalid_client' });
      expect((await introspect(c, pubDoomed.access_token, { client_id: PUB_DOOMED })).status, `process ${c.pid}`).toBe(401);
      expect((await refresh(c, pubDoomed.refresh_token, PUB_DOOMED)).body, `process ${c.pid}`).toMatchObject({ error: 'invalid_client' });
      // Seen by a client that still exists: the deleted client's tokens are gone.
      for (const t of [doomed.access_token, doomed.refresh_token, pubDoomed.access_token]) {
        expect((await introspect(c, t)).body, `process ${c.pid}`).toEqual({ active: false });
      }
    }
  });
});
