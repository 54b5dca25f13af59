import { connect, type Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selfSignedCertificate } from '../../src/serve/tls.js';
import { createClient, issue, startTestServer, type Client, type TestServer } from '../helpers/server.js';

/**
 * Hardening item 5 of SECURITY.md: no connection is held without limit. Real sockets against the
 * real server, with short limits so that the test does not wait for the production ones
 * (SECURITY.md).
 */

const LIMITS = { handshakeTimeoutMs: 500, headersTimeoutMs: 500, requestTimeoutMs: 1000, keepAliveTimeoutMs: 500, maxConnections: 6 };

/** Resolves with the ms until the server closed `socket` (and what it sent), or rejects after `withinMs`. */
function closedWithin(socket: Socket, withinMs: number): Promise<{ ms: number; text: string }> {
  const started = Date.now();
  let text = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server kept the connection open past ${withinMs} ms`));
    }, withinMs);
    socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ ms: Date.now() - started, text });
    });
  });
}

function opened(socket: Socket, event: 'connect' | 'secureConnect'): Promise<Socket> {
  return new Promise((resolve, reject) => {
    socket.once(event, () => resolve(socket));
    socket.once('error', reject);
  });
}

describe('HTTPS connections', () => {
  let s: TestServer;
  let ca: string;
  beforeAll(async () => {
    const tls = await selfSignedCertificate('127.0.0.1');
    ca = tls.cert;
    s = await startTestServer({ https: { key: tls.key, cert: tls.cert }, connections: LIMITS });
  });
  afterAll(() => s?.close());

  it('a TLS handshake never finished is closed at the handshake timeout', async () => {
    const raw = await opened(connect(s.port, '127.0.0.1'), 'connect');
    const r = await closedWithin(raw, 3000);
    expect(r.ms).toBeLessThan(2000);
    // Nothing in clear text on a socket that never became secure.
    expect(r.text).not.toContain('HTTP/1.1');
  });

  it('a handshake started and left half-way is closed too', async () => {
    const raw = await opened(connect(s.port, '127.0.0.1'), 'connect');
    raw.write(Buffer.from('160301', 'hex')); // the start of a ClientHello record
    const r = await closedWithin(raw, 3000);
    expect(r.ms).toBeLessThan(2000);
  });

  it('a connection that completed the handshake and sends nothing is closed at the headers timeout', async () => {
    const secure = await opened(connectTls({ port: s.port, host: '127.0.0.1', ca }), 'secureConnect');
    const r = await closedWithin(secure, 3000);
    expect(r.ms).toBeLessThan(2000);
  });
});

describe('HTTP connections', () => {
  let s: TestServer;
  let web: Client;
  beforeAll(async () => {
    s = await startTestServer({ connections: LIMITS });
    web = await createClient(s.engine, 'web');
  });
  afterAll(() => s?.close());

  it('a request whose headers never end is answered 408 and closed at the headers timeout', async () => {
    const socket = await opened(connect(s.port, '127.0.0.1'), 'connect');
    socket.write('POST /oauth/introspection HTTP/1.1\r\nHost: x\r\n');
    const r = await closedWithin(socket, 3000);
    expect(r.ms).toBeLessThan(2000);
    expect(r.text).toMatch(/^HTTP\/1\.1 408 /);
    expect(r.text).toContain('Cache-Control: no-store');
  });

  it('a keep-alive connection idle after its answer is closed at the keep-alive timeout', async () => {
    const socket = await opened(connect(s.port, '127.0.0.1'), 'connect');
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    const r = await closedWithin(socket, 3000);
    expect(r.text).toMatch(/^HTTP\/1\.1 200 /);
    expect(r.ms).toBeLessThan(2000);
  });

  /** One GET /healthz on `socket`, kept alive; resolves with the status line. */
  function healthOn(socket: Socket): Promise<string> {
    return new Promise((resolve, reject) => {
      let text = '';
      const timer = setTimeout(() => reject(new Error('no answer within 3 s')), 3000);
      const onData = (d: Buffer): void => {
        text += d.toString('latin1');
        if (/\r\n\r\n[\s\S]*\}/.test(text)) {
          clearTimeout(timer);
          socket.off('data', onData);
          resolve(text.slice(0, text.indexOf('\r\n')));
        }
      };
      socket.on('data', onData);
      socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    });
  }

  it('past the connection cap, new connections are closed at once, not held', async () => {
    const sockets: Socket[] = [];
    try {
      for (let i = 0; i < LIMITS.maxConnections + 3; i++) {
        const socket = await opened(connect(s.port, '127.0.0.1'), 'connect');
        socket.on('error', () => undefined);
        sockets.push(socket);
      }
      await new Promise((r) => setTimeout(r, 200));
      const open = sockets.filter((x) => !x.destroyed && !x.readableEnded);
      expect(open.length).toBe(LIMITS.maxConnections);
      // Those held have sent nothing: the headers timeout closes them too.
      await Promise.all(open.map((x) => closedWithin(x, 3000)));
    } finally {
      for (const socket of sockets) socket.destroy();
    }
  });

  it('at the connection cap, idle keep-alive connections make room for a client with a request', async () => {
    const sockets: Socket[] = [];
    try {
      for (let i = 0; i < LIMITS.maxConnections; i++) {
        const socket = await opened(connect(s.port, '127.0.0.1'), 'connect');
        socket.on('error', () => undefined);
        socket.on('end', () => undefined);
        sockets.push(socket);
        expect(await healthOn(socket)).toBe('HTTP/1.1 200 OK');
      }
      const fresh = await opened(connect(s.port, '127.0.0.1'), 'connect');
      sockets.push(fresh);
      expect(await healthOn(fresh)).toBe('HTTP/1.1 200 OK');
      // The idle ones were closed by the server, well before their keep-alive timeout.
      expect(sockets.slice(0, -2).every((x) => x.readableEnded || x.destroyed)).toBe(true);
    } finally {
      for (const socket of sockets) socket.destroy();
    }
  });

  it('every answer a pipelined request was promised is sent before a malformed request closes the connection', async () => {
    const tokens = await Promise.all([1, 2, 3].map(() => issue(s.engine, web)));
    const requests = tokens.map((t) => {
      const body = `token=${t.access_token}&token_type_hint=access_token&client_id=${web.id}&client_secret=${web.secret}`;
      return `POST /oauth/revocation HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    });
    const socket = await opened(connect(s.port, '127.0.0.1'), 'connect');
    socket.write(requests.join('') + 'POST /oauth/token HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n');
    const r = await closedWithin(socket, 5000);
    const statuses = [...r.text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
    expect(statuses, r.text).toEqual([200, 200, 200, 400]);
    for (const t of tokens) expect(r.text).toContain(t.jti);
  });
});
