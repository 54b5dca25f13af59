import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent } from 'node:https';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { OAuth2Client } from '@badgateway/oauth2-client';
import * as oauth from 'oauth4webapi';
import * as client from 'openid-client';
import { AuthorizationCode } from 'simple-oauth2';
import tokenIntrospection from 'token-introspection';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchTrusting } from '../helpers/server.js';
import { inheritedSettings } from '../helpers/env.js';

/**
 * The four libraries and the resource-server library against the real thing: `node bin/run.js
 * serve --demo --port 0` (needs `npm run build`), HTTPS with the development certificate it makes,
 * the demo client and tokens it prints. Each library on its defaults, trusting the certificate as
 * its documentation says. The in-process suites beside this one cover every mode and error.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = join(ROOT, 'bin/run.js');

describe('the libraries against a real `tokenctl serve --demo` process', () => {
  let sandbox: string;
  let child: ChildProcess;
  let url: string;
  let ca: string;
  let secret: string;
  let access: string;
  let refresh: string;
  let trusting: typeof fetch;
  const id = 'demo-client';

  beforeAll(async () => {
    if (!existsSync(join(ROOT, 'oclif.manifest.json')) || !existsSync(join(ROOT, 'dist'))) throw new Error('tokenctl is not built: run `npm run build` before these tests');
    sandbox = mkdtempSync(join(tmpdir(), 'tokenctl-interop-'));
    const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', HOME: sandbox, TOKENCTL_DATA_DIR: join(sandbox, 'data') };
    for (const key of inheritedSettings(env)) delete env[key];
    child = spawn(process.execPath, [BIN, 'serve', '--demo', '--port', '0', '--db', join(sandbox, 'demo.db'), '--log-level', 'warn'], { cwd: sandbox, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
    await new Promise<void>((done, fail) => {
      const timer = setTimeout(() => fail(new Error(`serve did not start:\n${out}\n${err}`)), 20_000);
      child.stdout!.setEncoding('utf8').on('data', (d: string) => {
        out += d;
        if (/^listening on /m.test(out)) {
          clearTimeout(timer);
          done();
        }
      });
      child.on('exit', (code) => fail(new Error(`serve exited (${code}):\n${out}\n${err}`)));
    });
    const field = (name: string) => new RegExp(`^\\s+${name}\\s+(\\S+)$`, 'm').exec(out)![1]!;
    url = /^listening on (https:\/\/\S+)$/m.exec(out)![1]!;
    secret = field('client_secret');
    access = field('access_token');
    refresh = field('refresh_token');
    ca = readFileSync(/certificate is (\S+\.pem)/.exec(out)![1]!, 'utf8');
    trusting = fetchTrusting(ca);
  });

  afterAll(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((done) => child.once('exit', done));
      child.kill('SIGTERM');
      await exited;
    }
    if (sandbox) rmSync(sandbox, { recursive: true, force: true });
  });

  it('openid-client: plain-OAuth discovery, refresh (client_secret_post), introspection without a hint', async () => {
    const config = await client.discovery(new URL(url), id, secret, undefined, { algorithm: 'oauth2', [client.customFetch]: trusting });
    const tokens = await client.refreshTokenGrant(config, refresh);
    expect(tokens).toMatchObject({ token_type: 'bearer', refresh_token: refresh, org_id: 'demo-org' });
    expect(await client.tokenIntrospection(config, tokens.access_token)).toMatchObject({ active: true, client_id: id, iss: url });
  });

  it('@badgateway/oauth2-client: discovery from `server`, refresh and introspection on its defaults', async () => {
    const c = new OAuth2Client({ server: url, clientId: id, clientSecret: secret, fetch: trusting });
    const refreshed = await c.refreshToken({ accessToken: access, refreshToken: refresh, expiresAt: null });
    expect(refreshed.refreshToken).toBe(refresh);
    expect(await c.introspect(refreshed)).toMatchObject({ active: true, username: 'demo-user' });
  });

  it('simple-oauth2: refresh on its defaults (Basic header, strict encoding)', async () => {
    const agent = new Agent({ ca });
    try {
      const oauth2 = new AuthorizationCode({ client: { id, secret }, auth: { tokenHost: url, revokePath: '/oauth/revocation' }, http: { agent } });
      const refreshed = await oauth2.createToken({ access_token: access, refresh_token: refresh }).refresh();
      expect(refreshed.token).toMatchObject({ token_type: 'bearer', refresh_token: refresh });
    } finally {
      agent.destroy();
    }
  });

  it('oauth4webapi: a wrong secret in client_secret_post surfaces the body, invalid_client', async () => {
    const issuer = new URL(url);
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', [oauth.customFetch]: trusting }));
    const res = await oauth.refreshTokenGrantRequest(as, { client_id: id }, oauth.ClientSecretPost('not-the-secret-123'), refresh, { [oauth.customFetch]: trusting });
    const err = await oauth.processRefreshTokenResponse(as, { client_id: id }, res).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(oauth.ResponseBodyError);
    expect((err as oauth.ResponseBodyError).error).toBe('invalid_client');
  });

  it('token-introspection: the access token is active, and not active once its grant is revoked (last: it revokes)', async () => {
    const introspect = tokenIntrospection({
      endpoint: `${url}/oauth/introspection`,
      client_id: id,
      client_secret: secret,
      fetch: trusting as unknown as NonNullable<Parameters<typeof tokenIntrospection>[0]>['fetch'],
    });
    expect(await introspect(access)).toMatchObject({ active: true, token_type: 'access_token' });
    const config = await client.discovery(new URL(url), id, secret, undefined, { algorithm: 'oauth2', [client.customFetch]: trusting });
    await client.tokenRevocation(config, refresh);
    await expect(introspect(access)).rejects.toBeInstanceOf(tokenIntrospection.errors.TokenNotActiveError);
  });
});
