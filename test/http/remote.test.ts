import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT, renderCliError } from '../../src/cli/errors.js';
import { endpointUrl, RemoteError, remoteIntrospect, remoteRefresh, remoteRevoke, type RemoteOptions } from '../../src/remote/http-client.js';
import { selfSignedCertificate } from '../../src/serve/tls.js';
import { createClient, issue, startTestServer, type Client, type TestServer } from '../helpers/server.js';

/** `src/remote/http-client.ts`, the CLI's `--url` client, against the real server over HTTPS. */
describe('remote client over HTTPS with a self-signed certificate', () => {
  let s: TestServer;
  let web: Client;
  let spa: Client;
  let dir: string;
  let caFile: string;
  let otherCaFile: string;

  beforeAll(async () => {
    const [tls, other] = await Promise.all([selfSignedCertificate('127.0.0.1'), selfSignedCertificate('127.0.0.1')]);
    dir = mkdtempSync(join(tmpdir(), 'tokenctl-remote-'));
    caFile = join(dir, 'ca.pem');
    otherCaFile = join(dir, 'other.pem');
    writeFileSync(caFile, tls.cert);
    writeFileSync(otherCaFile, other.cert);
    s = await startTestServer({ https: { key: tls.key, cert: tls.cert } });
    [web, spa] = await Promise.all([createClient(s.engine, 'web-app', { secret: 'a secret/with+odd=chars' }), createClient(s.engine, 'spa-app', { public: true })]);
  });
  afterAll(async () => {
    await s?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const opts = (c: Client, extra: Partial<RemoteOptions> = {}): RemoteOptions => ({
    url: s.url,
    clientId: c.id,
    ...(c.secret ? { clientSecret: c.secret } : {}),
    ca: caFile,
    ...extra,
  });

  it('refresh builds the spec’s scenario I header (a password with /, + and = included)', async () => {
    const issued = await issue(s.engine, web);
    const r = await remoteRefresh(opts(web), issued.refresh_token);
    expect(r).toMatchObject({ token_type: 'bearer', refresh_token: issued.refresh_token, node: 'node-t' });
  });

  it('refresh in scenario II, with a narrower scope', async () => {
    const issued = await issue(s.engine, spa);
    expect((await remoteRefresh(opts(spa), issued.refresh_token, 'read')).scope).toBe('read');
  });

  // The hint is sent only when the caller gives one (contract 3); this branch's
  // server still requires it, so these calls give it.
  it('introspect and revoke with form credentials and the hint given', async () => {
    const issued = await issue(s.engine, web);
    expect(await remoteIntrospect(opts(web), issued.refresh_token, 'refresh_token')).toMatchObject({ active: true, token_type: 'refresh_token' });
    expect(await remoteIntrospect(opts(spa), issued.refresh_token, 'refresh_token')).toEqual({ active: false }); // a public client sees only its own
    expect(await remoteRevoke(opts(web), issued.refresh_token, 'refresh_token')).toMatchObject({ code: 'token_revoke_success' });
    expect(await remoteRevoke(opts(web), issued.refresh_token, 'refresh_token')).toMatchObject({ code: 'token_already_revoked' });
    expect(await remoteIntrospect(opts(web), issued.access_token, 'access_token')).toEqual({ active: false });
  });

  it('a server error is a RemoteError with status, body and a message naming both', async () => {
    const issued = await issue(s.engine, web);
    const err = await remoteRefresh(opts(web, { clientSecret: 'wrong-password-1' }), issued.refresh_token).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RemoteError);
    expect((err as RemoteError).status).toBe(401);
    expect((err as RemoteError).body).toMatchObject({ error: 'invalid_client' });
    expect((err as RemoteError).message).toMatch(/401 invalid_client: The client account or password is incorrect: web-app/);

    const rec = await remoteRevoke(opts(web, { clientSecret: 'wrong-password-1' }), issued.access_token, 'access_token').catch((e: unknown) => e);
    expect((rec as RemoteError).message).toMatch(/401 Unauthorized: The client account or password is incorrect: web-app/);
  });

  it('without the CA: a TLS failure with status 0 and a hint to pass --ca', async () => {
    const err = await remoteIntrospect(opts(web, { ca: undefined }), 'x').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RemoteError);
    expect((err as RemoteError).status).toBe(0);
    expect((err as RemoteError).message).toMatch(/TLS failure.*--ca/);
  });

  it('with another certificate as CA: a TLS failure naming the CA file', async () => {
    const err = await remoteIntrospect(opts(web, { ca: otherCaFile }), 'x').catch((e: unknown) => e);
    expect((err as RemoteError).message).toMatch(new RegExp(`TLS failure.*${otherCaFile.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}`));
  });

  it('a CA file that cannot be read: said in words, bad input (exit 2), no server asked', async () => {
    const missing = join(dir, 'missing.pem');
    const err = await remoteIntrospect(opts(web, { ca: missing }), 'x').catch((e: unknown) => e);
    expect((err as RemoteError).message).toBe(`cannot read the CA file ${missing}: no such file`);
    expect((err as RemoteError).usage).toBe(true);
    expect(renderCliError(err)).toMatchObject({ code: 'usage', exitCode: EXIT.usage });
  });

  it('a CA file that holds no certificate: said so, not blamed on the server\'s TLS', async () => {
    const notPem = join(dir, 'not-a-cert.pem');
    writeFileSync(notPem, 'hostname\n');
    const err = await remoteIntrospect(opts(web, { ca: notPem }), 'x').catch((e: unknown) => e);
    expect((err as RemoteError).message).toMatch(/holds no PEM certificate/);
    expect((err as RemoteError).message).not.toMatch(/TLS failure/);
    expect(renderCliError(err).exitCode).toBe(EXIT.usage);
  });

  it('plain HTTP against the HTTPS port: an error, not a hang', async () => {
    const err = await remoteIntrospect(opts(web, { url: s.url.replace('https:', 'http:') }), 'x').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RemoteError);
  });
});

describe('remote client: connection problems and URLs', () => {
  it('connection refused: status 0 and a message saying so', async () => {
    const port = await new Promise<number>((resolve) => {
      const srv = createServer().listen(0, '127.0.0.1', () => {
        const p = (srv.address() as { port: number }).port;
        srv.close(() => resolve(p));
      });
    });
    const err = await remoteIntrospect({ url: `http://127.0.0.1:${port}`, clientId: 'x' }, 'tok').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RemoteError);
    expect((err as RemoteError).status).toBe(0);
    expect((err as RemoteError).message).toMatch(/connection refused/);
  });

  it('a timeout: status 0, "no answer"', async () => {
    const sockets: import('node:net').Socket[] = [];
    const silent = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const port = (silent.address() as { port: number }).port;
      const err = await remoteIntrospect({ url: `http://127.0.0.1:${port}`, clientId: 'x', timeoutMs: 200 }, 'tok').catch((e: unknown) => e);
      expect((err as RemoteError).message).toMatch(/no answer/);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('not a URL: bad input (exit 2), as any other bad flag value', async () => {
    await expect(remoteIntrospect({ url: 'localhost:8443', clientId: 'x' }, 't')).rejects.toThrow(/http\(s\) URL|not a URL/);
    const err = await remoteIntrospect({ url: 'nope', clientId: 'x' }, 't').catch((e: unknown) => e);
    expect((err as RemoteError).message).toMatch(/not a URL/);
    expect(renderCliError(err)).toMatchObject({ code: 'usage', exitCode: EXIT.usage });
    const ftp = await remoteIntrospect({ url: 'ftp://h', clientId: 'x' }, 't').catch((e: unknown) => e);
    expect(renderCliError(ftp)).toMatchObject({ exitCode: EXIT.usage, message: expect.stringMatching(/like https:\/\/127\.0\.0\.1:8443/) });
  });

  it.each([
    ['https://h:1', 'https://h:1/oauth/token'],
    ['https://h:1/', 'https://h:1/oauth/token'],
    ['https://h:1/auth', 'https://h:1/auth/oauth/token'],
    ['https://h:1/auth/', 'https://h:1/auth/oauth/token'],
  ])('endpoint of %s', (base, expected) => {
    expect(endpointUrl(base, 'oauth/token').href).toBe(expected);
  });

  describe('against a plain HTTP server', () => {
    let s: TestServer;
    beforeAll(async () => {
      s = await startTestServer();
    });
    afterAll(() => s?.close());

    it('works over http:// too', async () => {
      const c = await createClient(s.engine, 'c', { public: true });
      const issued = await issue(s.engine, c);
      expect((await remoteIntrospect({ url: s.url, clientId: c.id }, issued.access_token, 'access_token')).active).toBe(true);
    });
  });
});
