import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selfSignedCertificate } from '../../src/serve/tls.js';
import {
  captureLog,
  createClient,
  formAuth,
  issue,
  postForm,
  specBasic,
  startTestServer,
  type Client,
  type TestServer,
} from '../helpers/server.js';
import { rawExchange, type RawAnswer } from '../helpers/raw-http.js';

/** Exact bytes on a new connection (TLS with `ca`), read until the server closes it. */
const exchange = (port: number, bytes: string, ca?: string): Promise<RawAnswer> => rawExchange(port, bytes, { ca });

/** Contract 3: the answer's headers, as on every other answer of the server, and the connection closed. */
function expectRefusalHeaders(r: RawAnswer, status: number): void {
  expect(r.status, r.text).toBe(status);
  expect(r.headers['cache-control']).toBe('no-store');
  expect(r.headers.pragma).toBe('no-cache');
  expect(r.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(r.headers.connection).toBe('close');
  expect(Number(r.headers['content-length'])).toBe(Buffer.byteLength(r.body));
}

/** /oauth/token's record (RFC 6749 §5.2). */
function expectTokenRecord(r: RawAnswer, status: number): void {
  expectRefusalHeaders(r, status);
  expect(JSON.parse(r.body)).toEqual({ error: 'invalid_request', error_description: expect.stringMatching(/\S/) });
}

/** Spec 7.2's record, everywhere else. */
function expectSpecRecord(r: RawAnswer, status: number, reason: string, path: string): void {
  expectRefusalHeaders(r, status);
  const body = JSON.parse(r.body) as Record<string, unknown>;
  expect(Object.keys(body).sort()).toEqual(['error', 'message', 'path', 'status', 'timestamp']);
  expect(body).toMatchObject({ status, error: reason, path, message: expect.stringMatching(/\S/) });
  expect(body.timestamp).toMatch(/^\d{13}$/);
}

/**
 * Requests Node's HTTP parser refuses before any route exists get the server's own answer: the
 * endpoint's error record, `Cache-Control: no-store` and `Pragma: no-cache`, and the connection
 * closed; the next connection is served as usual, and nothing of the raw request is logged.
 */
describe('requests refused by the HTTP parser', () => {
  const log = captureLog();
  let s: TestServer;
  let web: Client;
  let secrets: string[];

  beforeAll(async () => {
    s = await startTestServer({ logger: { level: 'info', stream: log.stream } });
    web = await createClient(s.engine, 'web-app');
    secrets = [web.secret!, specBasic(web).slice(6)];
  });
  afterAll(() => s?.close());

  /** A request that Node's parser accepts, answered as usual, on a fresh connection. */
  async function expectServedAfterwards(): Promise<void> {
    const issued = await issue(s.engine, web);
    const r = await postForm(s.url, '/oauth/introspection', { token: issued.access_token, token_type_hint: 'access_token', ...formAuth(web) });
    expect(r.status, r.text).toBe(200);
    expect(r.json).toMatchObject({ active: true, jti: issued.jti });
  }

  it('a Content-Length that is not a number: 400 in /oauth/token\'s record', async () => {
    const issued = await issue(s.engine, web);
    secrets.push(issued.refresh_token);
    const body = `grant_type=refresh_token&refresh_token=${issued.refresh_token}`;
    const r = await exchange(s.port, `POST /oauth/token HTTP/1.1\r\nHost: x\r\nAuthorization: ${specBasic(web)}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1x\r\n\r\n${body}`);
    expectTokenRecord(r, 400);
    expect(JSON.parse(r.body).error_description).toMatch(/Content-Length/);
    await expectServedAfterwards();
  });

  it('Content-Length and Transfer-Encoding both (request smuggling): 400 in spec 7.2\'s record, the query not echoed', async () => {
    const body = `token=x&token_type_hint=access_token&client_id=${web.id}&client_secret=${web.secret}`;
    const r = await exchange(
      s.port,
      `POST /oauth/revocation?client_secret=${web.secret} HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\nTransfer-Encoding: chunked\r\n\r\n${body}`,
    );
    expectSpecRecord(r, 400, 'Bad Request', '/oauth/revocation');
    expect(r.body).not.toContain(web.secret!);
    await expectServedAfterwards();
  });

  it('a CR inside a header value: 400 in spec 7.2\'s record, no header injected', async () => {
    const r = await exchange(s.port, `POST /oauth/introspection HTTP/1.1\r\nHost: x\r\nX-Note: a\rSet-Cookie: x=1\r\nContent-Length: 0\r\n\r\n`);
    expectSpecRecord(r, 400, 'Bad Request', '/oauth/introspection');
    expect(r.headers['set-cookie']).toBeUndefined();
    await expectServedAfterwards();
  });

  it('two different Content-Lengths: 400', async () => {
    const r = await exchange(s.port, `POST /oauth/introspection HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 7\r\nContent-Length: 1\r\n\r\ntoken=x`);
    expectSpecRecord(r, 400, 'Bad Request', '/oauth/introspection');
    await expectServedAfterwards();
  });

  it('headers past Node\'s limit: 431 in the endpoint\'s record', async () => {
    const pad = 'a'.repeat(20_000);
    expectTokenRecord(await exchange(s.port, `POST /oauth/token HTTP/1.1\r\nHost: x\r\nX-Pad: ${pad}\r\nContent-Length: 0\r\n\r\n`), 431);
    expectSpecRecord(await exchange(s.port, `POST /oauth/revocation HTTP/1.1\r\nHost: x\r\nX-Pad: ${pad}\r\nContent-Length: 0\r\n\r\n`), 431, 'Request Header Fields Too Large', '/oauth/revocation');
    await expectServedAfterwards();
  });

  it('bytes that are not HTTP at all: 400 in spec 7.2\'s record, with no path to name', async () => {
    const r = await exchange(s.port, '\u0016\u0003\u0001\u0000\u00a5hello\r\n\r\n');
    expectSpecRecord(r, 400, 'Bad Request', '');
    await expectServedAfterwards();
  });

  it('a bad request pipelined behind a good one: the good one is answered first, then the refusal, then the connection closes', async () => {
    const issued = await issue(s.engine, web);
    const good = `token=${issued.access_token}&token_type_hint=access_token&client_id=${web.id}&client_secret=${web.secret}`;
    const r = await exchange(
      s.port,
      `POST /oauth/introspection HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${good.length}\r\n\r\n${good}` +
        `POST /oauth/token HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n`,
    );
    expect(r.text.startsWith('HTTP/1.1 200 OK\r\n'), r.text).toBe(true);
    expect(r.text).toContain(`"jti":"${issued.jti}"`);
    expectTokenRecord(r, 400);
    await expectServedAfterwards();
  });

  it('each refusal is one request log line, with the error code and no token, secret or header', () => {
    const text = log.text();
    for (const secret of secrets) expect(text).not.toContain(secret);
    expect(text.toLowerCase()).not.toContain('authorization');
    const refusals = log.lines().filter((l) => l.msg === 'request' && typeof l.parse_error === 'string');
    expect(refusals.length).toBeGreaterThanOrEqual(8);
    for (const line of refusals) {
      expect(line).toMatchObject({ status: expect.any(Number), error: 'invalid_request', ip: '127.0.0.1' });
      expect(line.reqId).toBeTypeOf('string');
    }
    expect(refusals[0]).toMatchObject({ method: 'POST', path: '/oauth/token', status: 400, parse_error: 'HPE_INVALID_CONTENT_LENGTH' });
    expect(refusals[1]).toMatchObject({ path: '/oauth/revocation', parse_error: 'HPE_INVALID_TRANSFER_ENCODING' });
    expect(log.lines().filter((l) => Number(l.level) >= 50)).toEqual([]);
  });
});

describe('requests refused by the HTTP parser, over HTTPS', () => {
  it('get the same answer inside TLS, and the connection closed', async () => {
    const tls = await selfSignedCertificate('127.0.0.1');
    const s = await startTestServer({ https: { key: tls.key, cert: tls.cert } });
    try {
      const r = await exchange(s.port, 'POST /oauth/introspection HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', tls.cert);
      expectSpecRecord(r, 400, 'Bad Request', '/oauth/introspection');
      const token = await exchange(s.port, 'POST /oauth/token HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n', tls.cert);
      expectTokenRecord(token, 400);
    } finally {
      await s.close();
    }
  });
});
