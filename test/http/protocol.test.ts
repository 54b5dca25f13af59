import { STATUS_CODES } from 'node:http';
import { afterEach, beforeAll, afterAll, describe, expect, it } from 'vitest';
import { StoreUnavailableError, type TokenStore } from '../../src/store/store.js';
import { MemoryStore } from '../../src/store/memory/index.js';
import {
  answer,
  createClient,
  expectRecord,
  formAuth,
  ISSUER,
  issue,
  postForm,
  rawRequest,
  specBasic,
  startTestServer,
  type Client,
  type TestServer,
} from '../helpers/server.js';

const ENDPOINTS = ['/oauth/token', '/oauth/revocation', '/oauth/introspection'] as const;

/** The shape each endpoint answers errors in (contract 3). */
function expectEndpointError(r: Awaited<ReturnType<typeof postForm>>, path: string, status: number): void {
  if (path === '/oauth/token') {
    expect(r.status, r.text).toBe(status);
    expect(r.json).toEqual({ error: 'invalid_request', error_description: expect.any(String) });
    expect(r.headers.get('cache-control')).toBe('no-store');
    expect(r.headers.get('pragma')).toBe('no-cache');
  } else {
    expectRecord(r, status, STATUS_CODES[status]!, path);
  }
}

/** Contract 3's transport rules: methods, media types, sizes, encodings, headers. */
describe('HTTP transport rules', () => {
  let s: TestServer;
  let web: Client;

  beforeAll(async () => {
    s = await startTestServer();
    web = await createClient(s.engine, 'web-app');
  });
  afterAll(() => s?.close());

  describe.each(ENDPOINTS)('%s', (path) => {
    it.each(['GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'])('%s: 405 with Allow: POST', async (method) => {
      const r = await answer(await fetch(s.url + path, { method }));
      expectEndpointError(r, path, 405);
      expect(r.headers.get('allow')).toBe('POST');
      if (path !== '/oauth/token') expect(r.json.error).toBe('Method Not Allowed');
    });

    it('HEAD: 405 with Allow: POST and no body', async () => {
      const res = await fetch(s.url + path, { method: 'HEAD' });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
      expect(await res.text()).toBe('');
    });

    it('a method fastify does not route (PROPFIND): 405 too', async () => {
      const raw = await rawRequest(s.port, `PROPFIND ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      expect(raw.status).toBe(405);
      expect(raw.headers.allow).toBe('POST');
    });

    it.each([
      ['application/json', '{"token":"x"}'],
      ['text/plain', 'token=x'],
      ['multipart/form-data; boundary=x', '--x--'],
      ['application/x-www-form-urlencoded; charset=iso-8859-1', 'token=x'],
    ])('Content-Type %s: 415', async (type, body) => {
      const r = await answer(await fetch(s.url + path, { method: 'POST', headers: { 'content-type': type }, body }));
      expectEndpointError(r, path, 415);
      if (path !== '/oauth/token') expect(r.json.error).toBe('Unsupported Media Type');
    });

    it('no Content-Type and no body: 415 (spec 4: the header is required)', async () => {
      const raw = await rawRequest(s.port, `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
      expect(raw.status).toBe(415);
      expect(raw.headers['cache-control']).toBe('no-store');
    });

    it('no Content-Type with a body: 415', async () => {
      const raw = await rawRequest(s.port, `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: 7\r\nConnection: close\r\n\r\ntoken=x`);
      expect(raw.status).toBe(415);
    });

    it('a charset=UTF-8 parameter is accepted (any case)', async () => {
      const r = await postForm(s.url, path, 'token=x', { 'content-type': 'Application/X-WWW-Form-Urlencoded; Charset="UTF-8"' });
      expect(r.status).not.toBe(415);
    });

    it('a body over 16 KiB: 413, announced or chunked', async () => {
      const big = 'token=' + 'a'.repeat(16 * 1024);
      expectEndpointError(await postForm(s.url, path, big), path, 413);
      const chunked = await rawRequest(
        s.port,
        `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n` +
          `${(big.length).toString(16)}\r\n${big}\r\n0\r\n\r\n`,
      );
      expect(chunked.status).toBe(413);
    });

    it('a body of exactly 16 KiB is read', async () => {
      const body = 'token=x&pad=' + 'a'.repeat(16 * 1024 - 'token=x&pad='.length);
      expect(Buffer.byteLength(body)).toBe(16 * 1024);
      const r = await postForm(s.url, path, body);
      expect([400, 401]).toContain(r.status);
    });

    it.each([
      ['a parameter given twice', 'token=a&token=a'],
      ['invalid percent-encoding', 'token=%zz&token_type_hint=access_token'],
      ['percent-encoding that is not UTF-8', 'token=%C3%28&token_type_hint=access_token'],
      ['a NUL character', 'token=a%00b&token_type_hint=access_token'],
      ['a NUL in a name', 'tok%00en=a'],
    ])('%s: 400', async (_name, body) => {
      const r = await postForm(s.url, path, body, { authorization: specBasic(web) });
      expect(r.status, r.text).toBe(400);
      expect(r.headers.get('cache-control')).toBe('no-store');
      if (path === '/oauth/token') expect(r.json.error).toBe('invalid_request');
      else expect(r.json.error).toBe('Bad Request');
    });

    it('raw bytes that are not UTF-8: 400', async () => {
      const head = `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 9\r\nConnection: close\r\n\r\n`;
      const raw = await rawRequest(s.port, Buffer.concat([Buffer.from(head), Buffer.from('token=a'), Buffer.from([0xff, 0xfe])]));
      expect(raw.status).toBe(400);
    });

    it('Content-Length larger than the body sent: 400, not a hang', async () => {
      const raw = await new Promise<{ status: number }>((resolve, reject) => {
        import('node:net').then(({ connect }) => {
          const socket = connect(s.port, '127.0.0.1');
          const chunks: Buffer[] = [];
          socket.on('data', (c: Buffer) => chunks.push(c));
          socket.on('error', reject);
          socket.on('close', () => resolve({ status: Number(Buffer.concat(chunks).toString().split(' ')[1]) }));
          socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\ntoken=x`);
          socket.end(); // half-close: the body ends short of its Content-Length
        }, reject);
      });
      expect(raw.status).toBe(400);
    });
  });

  it('parameters that are not in the spec are ignored (RFC 6749 §3.2)', async () => {
    const issued = await issue(s.engine, web);
    const r = await postForm(s.url, '/oauth/introspection', { token: issued.access_token, token_type_hint: 'access_token', ...formAuth(web), resource: 'x', extra: '' });
    expect(r.status).toBe(200);
    expect(r.json.active).toBe(true);
  });

  it('+ and %20 both decode to a space; a token with percent-encoded characters is found', async () => {
    const issued = await issue(s.engine, web);
    const encoded = issued.access_token.replace(/_/g, '%5F').replace(/-/g, '%2D');
    const r = await postForm(s.url, '/oauth/introspection', `token=${encoded}&token_type_hint=access_token&client_id=${web.id}&client_secret=${encodeURIComponent(web.secret!)}`);
    expect(r.json.active).toBe(true);
  });

  it('an unknown path: 404 in the record shape, the query never echoed', async () => {
    const r = await answer(await fetch(s.url + '/oauth/nothing-here?token=secret-looking'));
    expectRecord(r, 404, 'Not Found', '/oauth/nothing-here');
    expect(r.text).not.toContain('secret-looking');
  });

  it('a trailing slash is another path: 404', async () => {
    expect((await postForm(s.url, '/oauth/token/', 'grant_type=refresh_token')).status).toBe(404);
  });

  describe('GET /.well-known/oauth-authorization-server (RFC 8414)', () => {
    it('names the issuer, the three endpoints and the auth methods', async () => {
      const r = await answer(await fetch(s.url + '/.well-known/oauth-authorization-server'));
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toMatch(/^application\/json/);
      expect(r.json).toMatchObject({
        issuer: ISSUER,
        token_endpoint: `${ISSUER}/oauth/token`,
        revocation_endpoint: `${ISSUER}/oauth/revocation`,
        introspection_endpoint: `${ISSUER}/oauth/introspection`,
        // No login configured: no authorization endpoint, so no code grant (contract 5).
        grant_types_supported: ['refresh_token', 'client_credentials'],
        token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
        revocation_endpoint_auth_methods_supported: expect.arrayContaining(['client_secret_post', 'client_secret_basic', 'none']),
        introspection_endpoint_auth_methods_supported: expect.arrayContaining(['client_secret_post', 'client_secret_basic', 'none']),
      });
    });

    it('follows the engine’s issuer when it changes (serve --port 0 learns its URL late)', async () => {
      const before = s.engine.config.issuer;
      s.engine.config.issuer = 'https://elsewhere.example:9443';
      try {
        const r = await answer(await fetch(s.url + '/.well-known/oauth-authorization-server'));
        expect(r.json.token_endpoint).toBe('https://elsewhere.example:9443/oauth/token');
      } finally {
        s.engine.config.issuer = before;
      }
    });

    it('POST: 405 with Allow: GET, HEAD', async () => {
      const r = await postForm(s.url, '/.well-known/oauth-authorization-server', 'a=b');
      expect(r.status).toBe(405);
      expect(r.headers.get('allow')).toBe('GET, HEAD');
    });
  });

  it('GET /healthz: 200 when the store answers', async () => {
    const r = await answer(await fetch(s.url + '/healthz'));
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ status: 'ok' });
  });
});

/** A store whose every call fails the way it is told to. */
function failingStore(failure: () => Error): TokenStore {
  const inner = new MemoryStore();
  return new Proxy(inner, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function' || prop === 'createClient' || prop === 'close') return value;
      return async () => {
        throw failure();
      };
    },
  });
}

describe('server-side failures', () => {
  let s: TestServer | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  it('an unreachable store: 503 with Retry-After, in each endpoint’s shape; /healthz 503', async () => {
    s = await startTestServer({ store: failingStore(() => new StoreUnavailableError('database is locked at /var/secret/path')) });
    const token = await postForm(s.url, '/oauth/token', { grant_type: 'refresh_token', refresh_token: 'x' }, { authorization: specBasic({ id: 'a', secret: 'b' }) });
    expect(token.status).toBe(503);
    expect(token.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(token.json).toEqual({ error: 'temporarily_unavailable', error_description: expect.any(String) });
    expect(token.text).not.toContain('/var/secret/path');
    const intro = await postForm(s.url, '/oauth/introspection', { token: 'x', token_type_hint: 'access_token', client_id: 'a' });
    expectRecord(intro, 503, 'Service Unavailable', '/oauth/introspection');
    expect(intro.headers.get('retry-after')).toMatch(/^\d+$/);
    const health = await answer(await fetch(s.url + '/healthz'));
    expect(health.status).toBe(503);
  });

  it('an unexpected error: 500 with a generic message, no detail', async () => {
    s = await startTestServer({ store: failingStore(() => new TypeError('cannot read properties of undefined (reading "digest") SELECT * FROM tokens')) });
    const intro = await postForm(s.url, '/oauth/revocation', { token: 'x', token_type_hint: 'access_token', client_id: 'a' });
    expectRecord(intro, 500, 'Internal Server Error', '/oauth/revocation');
    expect(intro.text).not.toMatch(/SELECT|digest|TypeError/);
    const token = await postForm(s.url, '/oauth/token', { grant_type: 'refresh_token', refresh_token: 'x', client_id: 'a' });
    expect(token.status).toBe(500);
    expect(token.json).toEqual({ error: 'server_error', error_description: expect.not.stringMatching(/SELECT/) });
  });

  it('a flood of wrong passwords: past the hashing queue, 503 with Retry-After; another client still gets in', async () => {
    s = await startTestServer({ auth: { maxConcurrentHashes: 1, maxQueuedPerClient: 2, maxQueued: 64 } });
    const [victim, bystander] = await Promise.all([createClient(s.engine, 'victim'), createClient(s.engine, 'bystander')]);
    const issued = await issue(s.engine, bystander);
    const flood = Array.from({ length: 12 }, (_, i) =>
      postForm(s!.url, '/oauth/introspection', { token: 'x', token_type_hint: 'access_token', client_id: victim.id, client_secret: `wrong-password-${i}` }),
    );
    const honest = postForm(s.url, '/oauth/introspection', { token: issued.access_token, token_type_hint: 'access_token', ...formAuth(bystander) });
    const answers = await Promise.all(flood);
    const busy = answers.filter((a) => a.status === 503);
    expect(busy.length).toBeGreaterThan(0);
    expect(answers.filter((a) => a.status === 401).length).toBeGreaterThan(0);
    expect(answers.every((a) => a.status === 401 || a.status === 503)).toBe(true);
    expectRecord(busy[0]!, 503, 'Service Unavailable', '/oauth/introspection');
    expect(busy[0]!.headers.get('retry-after')).toMatch(/^\d+$/);
    const ok = await honest;
    expect(ok.status, ok.text).toBe(200);
    expect(ok.json.active).toBe(true);
  });

  it('/healthz: 503 when the store is closed', async () => {
    s = await startTestServer();
    await s.store.close();
    const r = await answer(await fetch(s.url + '/healthz'));
    expect(r.status).toBe(503);
  });
});
