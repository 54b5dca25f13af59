import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, issue, ROOT, sleep, tempStore, type TempStore } from '../helpers/cli.js';
import { developmentTls, freePort, startServe, type ServeProcess } from './serve-process.js';

/**
 * The worked example (examples/nginx, docs/resource-server.md): Debian's NGINX with auth_request
 * in front of an API, the auth sidecar (tokenctl/resource-server) answering its subrequests,
 * against a real `serve`. Needs /usr/sbin/nginx with the auth_request module (`.ci/run` installs
 * Debian's nginx-light); skipped, saying why, without it.
 */
const NGINX = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((p) => existsSync(p));
function nginxMissing(): string | null {
  if (!NGINX) return 'nginx is not installed (apt-get install nginx-light)';
  // nginx -V prints its configure arguments on stderr.
  const all = execFileSync('sh', ['-c', `${NGINX} -V 2>&1`], { encoding: 'utf8' });
  return all.includes('http_auth_request_module') ? null : 'this nginx lacks the auth_request module';
}
const missing = nginxMissing();
if (missing) console.warn(`skipping the NGINX example test: ${missing}`);

function waitForPort(port: number, timeoutMs = 15_000): Promise<void> {
  const start = Date.now();
  return new Promise((resolve, reject) => {
    const attempt = () => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => (socket.destroy(), resolve()));
      socket.once('error', () => {
        socket.destroy();
        if (Date.now() - start > timeoutMs) reject(new Error(`nothing listens on ${port}`));
        else setTimeout(attempt, 50);
      });
    };
    attempt();
  });
}

function waitForOutput(child: ChildProcess, re: RegExp, timeoutMs = 20_000): Promise<void> {
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${re}:\n${out}`)), timeoutMs);
    const on = (d: Buffer) => {
      out += d.toString();
      if (re.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on('data', on);
    child.stderr!.on('data', on);
  });
}

describe.skipIf(missing !== null)('the NGINX example: auth_request and the auth sidecar', () => {
  let store: TempStore;
  let serve: ServeProcess;
  let backend: Server;
  let sidecar: ChildProcess;
  let nginx: ChildProcess;
  let prefix: string;
  let base: string;
  let app: { id: string; secret: string | null };

  beforeAll(async () => {
    store = tempStore();
    const tls = await developmentTls();
    const rsClient = await createClient(store);
    app = await createClient(store, ['--audience', 'nginx-sidecar']);
    await store.json(['receiver', 'add', 'nginx-sidecar', '--poll', '--client', rsClient.id]);
    serve = startServe(store.db, tls, await freePort());
    await serve.up;

    prefix = mkdtempSync(join(tmpdir(), 'tokenctl-nginx-'));
    for (const d of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(prefix, d));
    writeFileSync(join(prefix, 'rs-secret'), rsClient.secret!, { mode: 0o600 });

    // The API behind NGINX: says who NGINX told it the caller is.
    backend = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ path: req.url, user: req.headers['x-user'], client: req.headers['x-client-id'], authorization: req.headers.authorization ?? null }));
    });
    await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
    const upstreamPort = (backend.address() as { port: number }).port;

    const sidecarPort = await freePort();
    sidecar = spawn(process.execPath, [join(ROOT, 'examples/nginx/auth-sidecar.mjs')], {
      env: { ...process.env, TOKENCTL_URL: serve.url, RS_CLIENT_ID: rsClient.id, RS_CLIENT_SECRET_FILE: join(prefix, 'rs-secret'), TOKENCTL_CA: tls.certFile, SIDECAR_PORT: String(sidecarPort), RS_AUDIENCE: 'nginx-sidecar' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    await waitForOutput(sidecar, /event stream up/);

    const port = await freePort();
    const conf = readFileSync(join(ROOT, 'examples/nginx/nginx.conf.template'), 'utf8')
      .replaceAll('@PREFIX@', prefix)
      .replaceAll('@PORT@', String(port))
      .replaceAll('@SIDECAR_PORT@', String(sidecarPort))
      .replaceAll('@UPSTREAM_PORT@', String(upstreamPort));
    writeFileSync(join(prefix, 'nginx.conf'), conf);
    nginx = spawn(NGINX!, ['-p', prefix, '-c', join(prefix, 'nginx.conf')], { stdio: ['ignore', 'pipe', 'pipe'] });
    await waitForPort(port);
    base = `http://127.0.0.1:${port}`;
  }, 90_000);

  afterAll(async () => {
    nginx?.kill('SIGQUIT');
    sidecar?.kill('SIGTERM');
    backend?.close();
    await serve?.stop();
    store?.cleanup();
    if (prefix) rmSync(prefix, { recursive: true, force: true });
  });

  const get = (path: string, token?: string) => fetch(base + path, { headers: token ? { authorization: `Bearer ${token}` } : {} });

  it('passes a valid token through with the user, and never the token itself', async () => {
    const t = await issue(store, app.id, 'alice');
    const res = await get('/api/hello', t.access_token);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ path: '/api/hello', user: 'alice', client: app.id, authorization: null });
  });

  it('answers 401 with the RFC 6750 challenge without a token or with an invalid one', async () => {
    const none = await get('/api/hello');
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer realm="api"');
    const bad = await get('/api/hello', 'tca_nope');
    expect(bad.status).toBe(401);
    expect(bad.headers.get('www-authenticate')).toMatch(/error="invalid_token"/);
  });

  it('answers 403 when the location needs a scope the token lacks', async () => {
    const t = await issue(store, app.id, 'alice', ['--scope', 'read']);
    expect((await get('/api/admin/x', t.access_token)).status).toBe(403);
  });

  it('refuses a token within 1 s of its revocation by the CLI, though the sidecar keeps answers 10 minutes', async () => {
    const t = await issue(store, app.id, 'bob');
    for (let i = 0; i < 5; i++) expect((await get('/api/hello', t.access_token)).status).toBe(200);
    await store.json(['revoke', t.access_token]);
    const revokedAt = Date.now();
    while ((await get('/api/hello', t.access_token)).status !== 401) {
      expect(Date.now() - revokedAt).toBeLessThan(1000);
      await sleep(10);
    }
  }, 30_000);
});
