import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawExchange } from '../helpers/raw-http.js';
import { captureLog, createClient, startTestServer, type Client, type TestServer } from '../helpers/server.js';
import { until } from '../helpers/load.js';

/**
 * Hardening item 7 of SECURITY.md (the lesser ones): Node's own refusals in the endpoints' record,
 * an aborted request body not logged as an unexpected error, and client passwords masked in logged
 * paths.
 */
describe('refusals Node would write itself, and what the log says', () => {
  const log = captureLog();
  let s: TestServer;
  let web: Client;
  beforeAll(async () => {
    s = await startTestServer({ logger: { level: 'info', stream: log.stream } });
    web = await createClient(s.engine, 'web');
  });
  afterAll(() => s?.close());

  it('an Expect other than 100-continue: 417 in the 7.2 record, no-store, the connection closed', async () => {
    const body = 'token=x&token_type_hint=access_token&client_id=web';
    const r = await rawExchange(
      s.port,
      `POST /oauth/introspection HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    expect(r.status, r.text).toBe(417);
    expect(r.headers['cache-control']).toBe('no-store');
    expect(r.headers.pragma).toBe('no-cache');
    expect(r.headers.connection).toBe('close');
    expect(JSON.parse(r.body)).toMatchObject({ status: 417, error: 'Expectation Failed', path: '/oauth/introspection', message: expect.stringContaining('Expect') });
  });

  it('an HTTP/1.1 request without Host: 400 in the RFC 6749 record at /oauth/token, no-store', async () => {
    const r = await rawExchange(s.port, 'POST /oauth/token HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 3\r\n\r\na=b');
    expect(r.status, r.text).toBe(400);
    expect(r.headers['cache-control']).toBe('no-store');
    expect(JSON.parse(r.body)).toEqual({ error: 'invalid_request', error_description: expect.stringContaining('Host') });
  });

  it('a request body aborted half-way is not logged as an unexpected error', async () => {
    const before = log.lines().length;
    for (const chunked of [true, false]) {
      const socket = connect(s.port, '127.0.0.1');
      await new Promise((r) => socket.once('connect', r));
      const framing = chunked ? 'Transfer-Encoding: chunked\r\n\r\n10\r\ntoken=abcdefghij' : 'Content-Length: 1000\r\n\r\ntoken=abcdefghij';
      socket.write(`POST /oauth/revocation HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n${framing}`);
      await new Promise((r) => setTimeout(r, 50));
      socket.destroy();
    }
    await new Promise((r) => setTimeout(r, 200));
    const lines = log.lines().slice(before);
    expect(lines.filter((l) => l.msg === 'unexpected error' || Number(l.level) >= 50), JSON.stringify(lines)).toEqual([]);
  });

  it('a generated client password (tcs_) in a logged path is masked', async () => {
    await fetch(`${s.url}/clients/${web.secret}`);
    await until(() => log.text().includes('/clients/'), 2000, 'the request log line');
    expect(web.secret).toMatch(/^tcs_/);
    expect(log.text()).not.toContain(web.secret!.slice(4));
    expect(log.text()).toContain('/clients/tcs_[redacted]');
  });
});
