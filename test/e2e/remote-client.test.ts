import { chmodSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import { buildServer, type TokenctlApp } from '../../src/http/server.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import type { TokenStore } from '../../src/store/store.js';
import { createClient, hasScript, issue, stripAnsi, tempStore, tokenctl, tokenctlInTerminal, type IssuedTokens, type TempStore } from '../helpers/cli.js';

/**
 * The --url client without secrets on the command line: TOKENCTL_CLIENT_SECRET, profiles in a
 * 0600 file, a prompt without echo; and its honesty towards servers that misbehave.
 */
describe('--url with the secret off the command line', () => {
  let store: TempStore;
  let serverStore: TokenStore;
  let app: TokenctlApp;
  let url: string;
  let web: { id: string; secret: string | null };
  let t: IssuedTokens;
  // A config directory of our own (oclif: XDG_CONFIG_HOME/tokenctl).
  let env: Record<string, string>;

  beforeAll(async () => {
    store = tempStore();
    web = await createClient(store);
    t = await issue(store, web.id, 'alice');
    serverStore = await SqliteStore.open(store.db);
    app = buildServer({ engine: new Engine({ store: serverStore, issuer: 'https://issuer.test', node: 'srv' }) });
    await app.listen({ host: '127.0.0.1', port: 0 });
    url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    env = { XDG_CONFIG_HOME: join(store.dir, 'config') };
  });
  afterAll(async () => {
    await app?.close();
    await serverStore?.close();
    store.cleanup();
  });

  it('TOKENCTL_CLIENT_SECRET authenticates the client; a wrong one is a 401 with a hint', async () => {
    const [ok, wrong] = await Promise.all([
      tokenctl(['refresh', t.refresh_token, '--url', url, '--client-id', web.id, '--json'], { env: { TOKENCTL_CLIENT_SECRET: web.secret! } }),
      tokenctl(['refresh', t.refresh_token, '--url', url, '--client-id', web.id], { env: { TOKENCTL_CLIENT_SECRET: 'wrong-secret-123' } }),
    ]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.json().refresh_token).toBe(t.refresh_token);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/401/);
    expect(wrong.stderr).toMatch(/Hint: check the client ID and secret/);
  });

  it('profile add keeps URL, client and secret in a 0600 file; --profile and TOKENCTL_PROFILE use it; list never shows the secret', async () => {
    const add = await tokenctl(['profile', 'add', 'local', '--url', url, '--client-id', web.id, '--store-secret', '--json'], { env, input: `${web.secret}\n` });
    expect(add.code, add.stderr).toBe(0);
    const file = add.json().file as string;
    expect(file).toBe(join(store.dir, 'config', 'tokenctl', 'profiles.json'));
    expect((statSync(file).mode & 0o777).toString(8)).toBe('600');

    const byFlag = await tokenctl(['introspect', t.access_token, '--hint', 'access_token', '--profile', 'local', '--json'], { env });
    const byEnv = await tokenctl(['revoke', t.access_token, '--hint', 'access_token', '--json'], { env: { ...env, TOKENCTL_PROFILE: 'local' } });
    const list = await tokenctl(['profile', 'list'], { env });
    expect(byFlag.code, byFlag.stderr).toBe(0);
    expect(byFlag.json()).toMatchObject({ active: true, jti: t.jti });
    expect(byEnv.code, byEnv.stderr).toBe(0);
    expect(byEnv.json().code).toBe('token_revoke_success');
    expect(list.stdout).toMatch(new RegExp(`local\\s+${url}\\s+${web.id}\\s+stored in the profile file`));
    expect(list.stdout + list.stderr).not.toContain(web.secret!);

    const other = await tokenctl(['profile', 'add', 'env', '--url', url, '--client-id', web.id, '--secret-env', 'MY_SECRET'], { env });
    expect(other.code, other.stderr).toBe(0);
    const unset = await tokenctl(['introspect', t.access_token, '--hint', 'access_token', '--profile', 'env'], { env });
    expect(unset.code).toBe(2);
    expect(unset.stderr).toMatch(/takes the client secret from \$MY_SECRET, which is not set/);

    // An unknown profile is "not found", exit 4, as an unknown client or jti is.
    const missing = await tokenctl(['introspect', t.access_token, '--profile', 'nope'], { env });
    expect(missing.code).toBe(4);
    expect(missing.stderr).toContain(`no profile "nope" in ${file}`);
    const removeMissing = await tokenctl(['profile', 'remove', 'nope'], { env });
    expect(removeMissing.code).toBe(4);
    expect(removeMissing.stderr).toContain(`no profile "nope" in ${file}`);

    expect((await tokenctl(['profile', 'remove', 'local'], { env })).code).toBe(0);
    expect((await tokenctl(['profile', 'list', '--json'], { env })).json().map((p: { name: string }) => p.name)).toEqual(['env']);
  });

  it('profile check: the server answers and takes the credentials (exit 0); a wrong secret, or no server, exit 1', async () => {
    const add = (name: string, at: string, secret: string) =>
      tokenctl(['profile', 'add', name, '--url', at, '--client-id', web.id, '--store-secret', '--force'], { env, input: `${secret}\n` });
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const down = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise((r) => closed.close(r));
    for (const [name, at, secret] of [['check-ok', url, web.secret!], ['check-bad', url, 'wrong-secret-123'], ['check-down', down, web.secret!]] as const) {
      expect((await add(name, at, secret)).code).toBe(0);
    }
    const [ok, bad, gone, text] = await Promise.all([
      tokenctl(['profile', 'check', 'check-ok', '--json'], { env }),
      tokenctl(['profile', 'check', 'check-bad', '--json'], { env }),
      tokenctl(['profile', 'check', 'check-down', '--json'], { env }),
      tokenctl(['profile', 'check', 'check-bad'], { env }),
    ]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.json()).toEqual({ name: 'check-ok', url, client_id: web.id, answers: true, credentials: 'accepted' });
    expect(bad.code).toBe(1);
    expect(bad.json()).toMatchObject({ answers: true, credentials: 'refused' });
    expect(gone.code).toBe(1);
    expect(gone.json()).toMatchObject({ answers: false, credentials: 'unknown' });
    expect(text.stdout).toMatch(/refuses the credentials of \S+ \(401\)/);
    expect(text.stdout + text.stderr).not.toContain('wrong-secret-123');
  });

  it('a profile file others can read is refused while it holds a secret', async () => {
    const cfg = { XDG_CONFIG_HOME: join(store.dir, 'config-open') };
    expect((await tokenctl(['profile', 'add', 'p', '--url', url, '--client-id', web.id, '--store-secret'], { env: cfg, input: 'some-secret-value' })).code).toBe(0);
    const file = join(store.dir, 'config-open', 'tokenctl', 'profiles.json');
    chmodSync(file, 0o644);
    const r = await tokenctl(['profile', 'list'], { env: cfg });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/holds a client secret and others may read it \(mode 644\)/);
  });

  it.skipIf(!hasScript())('at a terminal, a missing secret is asked for without echo', async () => {
    const secret = web.secret!;
    const run = await tokenctlInTerminal(['introspect', t.refresh_token, '--hint', 'refresh_token', '--url', url, '--client-id', web.id], {
      answers: [{ when: /Client secret of .* \(not echoed/, send: `${secret}\r` }],
    });
    const output = stripAnsi(run.output);
    expect(run.code, output).toBe(0);
    expect(output).toMatch(/ACTIVE/);
    expect(output).not.toContain(secret);
  });
});

/** Servers that misbehave: the client stays honest and the terminal safe. */
describe('--url against a misbehaving server', () => {
  let server: Server;
  let url: string;
  const bodies: string[] = [];
  let mode: 'silent' | 'escape' | 'record' = 'record';

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        bodies.push(body);
        if (mode === 'silent') return; // accepts, reads, never answers
        if (mode === 'escape') {
          res.writeHead(401, { 'content-type': 'application/json' }); // no WWW-Authenticate
          res.end(JSON.stringify({ error: 'invalid_client', error_description: 'bad \u001b]0;pwned\u0007\u001b[2J client \u009b31m' }));
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"active":false}');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  const token = 'tca_' + 'b'.repeat(43);

  it('no token_type_hint is sent unless the user gives one', async () => {
    mode = 'record';
    bodies.length = 0;
    await tokenctl(['introspect', token, '--url', url, '--client-id', 'c1']);
    await tokenctl(['introspect', token, '--url', url, '--client-id', 'c1', '--hint', 'refresh_token']);
    expect(new URLSearchParams(bodies[0]).has('token_type_hint')).toBe(false);
    expect(new URLSearchParams(bodies[1]).get('token_type_hint')).toBe('refresh_token');
  });

  it('a server that never answers: --timeout bounds the whole exchange and the message says so', async () => {
    mode = 'silent';
    const started = Date.now();
    const r = await tokenctl(['introspect', token, '--url', url, '--client-id', 'c1', '--timeout', '1s']);
    const elapsed = Date.now() - started;
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/no answer from http:\/\/127\.0\.0\.1:\d+ within 1s \(still waiting for an answer; --timeout sets the limit\)/);
    expect(elapsed).toBeLessThan(5000);
  });

  it('escape sequences in a server’s answer (a 401 without WWW-Authenticate) are never printed raw', async () => {
    mode = 'escape';
    const [human, json] = await Promise.all([
      tokenctl(['revoke', token, '--url', url, '--client-id', 'c1']),
      tokenctl(['revoke', token, '--url', url, '--client-id', 'c1', '--json']),
    ]);
    for (const r of [human, json]) {
      expect(r.code).toBe(1);
      // eslint-disable-next-line no-control-regex
      expect(r.stderr).not.toMatch(/[\u001b\u0007\u009b]/);
      expect(r.stderr).toMatch(/401/);
    }
    expect(human.stderr).toContain('\\u001b]0;pwned');
  });
});
