import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import { buildServer, type TokenctlApp } from '../../src/http/server.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import type { TokenStore } from '../../src/store/store.js';
import { createClient, issue, issueInThePast, startTokenctl, tempStore, type IssuedTokens, type TempStore } from '../helpers/cli.js';

/**
 * `refresh`, `revoke` and `introspect` with --url: the CLI as an HTTP client of a server on the
 * same store (started here in-process, plain HTTP on loopback), speaking spec part 4.
 */
describe('--url: the CLI against a server', () => {
  let store: TempStore;
  let serverStore: TokenStore;
  let app: TokenctlApp;
  let url: string;
  let web: { id: string; secret: string | null };
  let pub: { id: string; secret: string | null };
  let tokens: IssuedTokens;
  let brief: IssuedTokens;

  beforeAll(async () => {
    store = tempStore();
    [web, pub] = await Promise.all([createClient(store), createClient(store, ['--public'])]);
    tokens = await issue(store, web.id, 'alice');
    // Issued 5 s ago for 1 s: expired already, not waited for.
    brief = await issueInThePast(store, web.id, 'bob', 5_000, { refreshTtlMs: 1_000 });
    serverStore = await SqliteStore.open(store.db);
    app = buildServer({ engine: new Engine({ store: serverStore, issuer: 'https://issuer.test', node: 'srv' }) });
    await app.listen({ host: '127.0.0.1', port: 0 });
    url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await app?.close();
    await serverStore?.close();
    store.cleanup();
  });

  // The CLI sends token_type_hint only when given (contract 3); this branch's
  // server still requires it, so introspect and revoke give it here.
  const hint = (args: string[]) =>
    (args[0] === 'introspect' || args[0] === 'revoke') && /^tc[ar]_/.test(args[1] ?? '') ? ['--hint', args[1]!.startsWith('tca_') ? 'access_token' : 'refresh_token'] : [];
  const remote = (args: string[], client = web) => [...args, ...hint(args), '--url', url, '--client-id', client.id, ...(client.secret ? ['--client-secret', client.secret] : [])];

  it('refresh --url prints the server’s token response', async () => {
    const r = await store.run(remote(['refresh', tokens.refresh_token, '--json']));
    expect(r.code, r.stderr).toBe(0);
    expect(r.json()).toMatchObject({ token_type: 'bearer', node: 'srv', refresh_token: tokens.refresh_token });
  });

  it('introspect --url prints exactly the server’s 2.3 record; exit 3 when inactive', async () => {
    const [active, human, unknown] = await Promise.all([
      store.run(remote(['introspect', tokens.access_token, '--json'])),
      store.run(remote(['introspect', tokens.access_token])),
      store.run(remote(['introspect', 'tca_' + 'Q'.repeat(43), '--json'], pub)),
    ]);
    expect(active.code, active.stderr).toBe(0);
    expect(active.json()).toMatchObject({ active: true, iss: 'https://issuer.test', jti: tokens.jti, client_id: web.id });
    expect(human.stdout.split('\n')[0]).toMatch(/^ACTIVE expires in/);
    expect(unknown.code).toBe(3);
    expect(unknown.json()).toEqual({ active: false });
  });

  it('revoke --url prints the server’s 2.2 result', async () => {
    const first = await store.run(remote(['revoke', tokens.access_token, '--json']));
    expect(first.code, first.stderr).toBe(0);
    expect(first.json()).toMatchObject({ code: 'token_revoke_success' });
    const local = await store.run(['introspect', tokens.access_token, '--json']);
    expect(local.code).toBe(3);
  });

  it('a server error is shown with its status and error, exit 1; --json puts it on stderr', async () => {
    const wrong = { id: web.id, secret: 'wrong-secret-wrong-secret-wrong-secret' };
    const [human, json] = await Promise.all([
      store.run(remote(['introspect', tokens.refresh_token], wrong)),
      store.run(remote(['refresh', tokens.refresh_token, '--json'], wrong)),
    ]);
    expect(human.code).toBe(1);
    expect(human.stderr).toMatch(/401/);
    expect(human.stderr).toMatch(/Unauthorized|incorrect/);
    expect(json.code).toBe(1);
    expect(json.stdout).toBe('');
    expect(JSON.parse(json.stderr).error).toMatchObject({ code: 'remote_error', status: 401, body: { error: 'invalid_client' } });
  });

  it('an expired refresh token: the server’s 401 invalid_token, shown without the token (spec 7.1 echoes it)', async () => {
    const [human, json] = await Promise.all([
      store.run(remote(['refresh', brief.refresh_token])),
      store.run(remote(['refresh', brief.refresh_token, '--json'])),
    ]);
    expect(human.code).toBe(1);
    expect(human.stderr).toMatch(/401 invalid_token/);
    expect(human.stderr).toMatch(/expired/);
    expect(human.stderr).toContain(brief.refresh_token.slice(0, 10) + '…');
    expect(human.stderr).not.toContain(brief.refresh_token);
    expect(JSON.parse(json.stderr).error).toMatchObject({ status: 401, body: { error: 'invalid_token' } });
    expect(json.stderr).not.toContain(brief.refresh_token);
  });

  it('a server that is not there: a clear error, exit 1', async () => {
    const r = await store.run(['introspect', tokens.access_token, '--url', 'http://127.0.0.1:1', '--client-id', pub.id]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/cannot connect|refused/);
  });

  it('--url without --client-id, or with a bulk selection, is a usage error', async () => {
    const [noClient, bulk] = await Promise.all([
      store.run(['refresh', tokens.refresh_token, '--url', url]),
      store.run(['revoke', '--user', 'alice', '--url', url, '--client-id', web.id]),
    ]);
    expect(noClient.code).toBe(2);
    expect(noClient.stderr).toMatch(/--client-id/);
    expect(bulk.code).toBe(2);
  });
});

/** The real `tokenctl serve` over HTTPS with its development certificate: --ca trusts it. */
describe('--url over HTTPS with --ca', () => {
  let store: TempStore;
  let server: ReturnType<typeof startTokenctl>;
  let url: string;
  let cert: string;
  let pub: { id: string; secret: string | null };
  let tokens: IssuedTokens;

  beforeAll(async () => {
    store = tempStore();
    pub = await createClient(store, ['--public']);
    tokens = await issue(store, pub.id, 'alice');
    server = startTokenctl(['serve', '--port', '0', '--tls-self-signed', '--log-level', 'warn', '--db', store.db]);
    [, url] = (await server.waitFor(/listening on (https:\/\/\S+)/)) as unknown as [string, string];
    [, cert] = (await server.waitFor(/certificate: (\S+\.pem)/)) as unknown as [string, string];
  });
  afterAll(async () => {
    await server?.stop();
    store.cleanup();
  });

  it('introspects through TLS when --ca names the server certificate, and says why not without it', async () => {
    const [trusted, untrusted] = await Promise.all([
      store.run(['introspect', tokens.access_token, '--url', url, '--client-id', pub.id, '--ca', cert, '--hint', 'access_token', '--json']),
      store.run(['introspect', tokens.access_token, '--url', url, '--client-id', pub.id]),
    ]);
    expect(trusted.code, trusted.stderr).toBe(0);
    expect(trusted.json()).toMatchObject({ active: true, jti: tokens.jti });
    expect(untrusted.code).toBe(1);
    expect(untrusted.stderr).toMatch(/TLS|certificate/);
    expect(untrusted.stderr).toMatch(/--ca/);
  });
});
