import { Agent, createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { trustedProxies } from '../../src/http/client-address.js';
import { captureLog, createClient, formAuth, startTestServer, type Client, type TestServer } from '../helpers/server.js';

/**
 * `serve --trust-proxy`: behind a proxy every connection comes from the proxy's address, so the
 * brute-force budgets must key on the client address the proxy forwards (X-Forwarded-For).
 * The proxy here is a real HTTP hop on 127.0.0.1 that appends its peer's address, as NGINX's
 * `$proxy_add_x_forwarded_for` does; the clients connect to it from 127.0.0.2 (the owner) and
 * 127.0.0.3 (the attacker).
 */
const OWNER = '127.0.0.2';
const ATTACKER = '127.0.0.3';
// Small budgets so that the flood spends them in a few hashes.
const auth = { failures: { perSourceAndClient: { burst: 5, perMinute: 6 }, perSource: { burst: 20, perMinute: 6 }, perClient: { burst: 12, perMinute: 6 } } };

interface Proxy {
  url: string;
  close(): Promise<void>;
}

/** A forwarding proxy to `upstream`: one hop, X-Forwarded-For with its peer's address appended. */
async function forwardingProxy(upstream: string): Promise<Proxy> {
  const agent = new Agent({ keepAlive: true, maxSockets: 8 });
  const server: Server = createServer((req, res) => {
    const forwarded = [req.headers['x-forwarded-for'], req.socket.remoteAddress].filter(Boolean).join(', ');
    const up = request(upstream + req.url, { method: req.method, headers: { ...req.headers, 'x-forwarded-for': forwarded }, agent }, (answer) => {
      res.writeHead(answer.statusCode!, answer.headers);
      answer.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      agent.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** POSTs a form to `url` from the local address `from`; `chunked` sends it without a length (fastify's door). */
function postFrom(from: string, url: string, path: string, form: Record<string, string>, headers: IncomingHttpHeaders = {}, chunked = false): Promise<number> {
  const body = new URLSearchParams(form).toString();
  return new Promise((resolve, reject) => {
    const req = request(
      url + path,
      {
        method: 'POST',
        localAddress: from,
        agent: false,
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...(chunked ? {} : { 'content-length': Buffer.byteLength(body) }), ...headers },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      },
    );
    req.on('error', reject);
    if (chunked) req.write(body.slice(0, 5));
    req.end(chunked ? body.slice(5) : body);
  });
}

const introspect = (client: Client, secret = client.secret!) => ({ token: 'tca_unknown', ...formAuth(client), client_secret: secret });

describe('serve --trust-proxy', () => {
  let s: TestServer | undefined;
  let proxy: Proxy | undefined;
  afterEach(async () => {
    await proxy?.close();
    await s?.close();
  });

  async function behindProxy(trust: string[] | undefined) {
    const log = captureLog();
    s = await startTestServer({ auth, trustProxy: trust && trustedProxies(trust), logger: { level: 'info', stream: log.stream } });
    proxy = await forwardingProxy(s.url);
    const owner = await createClient(s.engine, 'owner-app');
    return { owner, proxy, log };
  }

  /** Wrong secrets for the owner's client id, 8 at a time; some claim to come from the owner's address. */
  async function flood(p: Proxy, owner: Client, n: number): Promise<number[]> {
    const statuses: number[] = [];
    for (let i = 0; i < n; i += 8) {
      const batch = Array.from({ length: Math.min(8, n - i) }, (_, j) =>
        postFrom(ATTACKER, p.url, '/oauth/introspection', introspect(owner, `wrong-${i + j}`), i % 16 === 0 ? { 'x-forwarded-for': OWNER } : {}),
      );
      statuses.push(...(await Promise.all(batch)));
    }
    return statuses;
  }

  it('without it, behind a proxy the owner shares the flood\'s budget and is refused (the finding)', async () => {
    const { owner, proxy: p } = await behindProxy(undefined);
    const statuses = await flood(p, owner, 40);
    expect(statuses).toContain(429);
    expect(await postFrom(OWNER, p.url, '/oauth/introspection', introspect(owner))).toBe(429);
  });

  it('with the proxy trusted, the owner is served while an attacker floods wrong secrets, and the header cannot be forged', async () => {
    const { owner, proxy: p, log } = await behindProxy(['127.0.0.1']);
    const flooding = flood(p, owner, 40);
    // The owner's first presentation (never verified, so it needs a hash) arrives mid-flood.
    const first = await postFrom(OWNER, p.url, '/oauth/introspection', introspect(owner));
    const statuses = await flooding;
    expect(first).toBe(200);
    // The attacker's own pair budget: 5 hashes, then 429; the forged header changed nothing.
    expect(statuses.filter((st) => st === 401).length).toBeLessThanOrEqual(5);
    expect(statuses.filter((st) => st === 429).length).toBeGreaterThanOrEqual(35);
    // Its new secrets through both doors after the flood: still heard (fast path, then fastify).
    await s!.engine.rotateClientSecret(owner.id, 'test', 'a-new-owner-secret');
    expect(await postFrom(OWNER, p.url, '/oauth/introspection', introspect(owner, 'a-new-owner-secret'))).toBe(200);
    await s!.engine.rotateClientSecret(owner.id, 'test', 'another-owner-secret');
    expect(await postFrom(OWNER, p.url, '/oauth/introspection', introspect(owner, 'another-owner-secret'), {}, true)).toBe(200);
    const ips = new Set(log.lines().filter((l) => l.msg === 'request').map((l) => l.ip));
    expect([...ips].sort()).toEqual([OWNER, ATTACKER]);
  });

  it('both doors name the same client: the forwarded one from a trusted peer, the peer itself otherwise', async () => {
    const log = captureLog();
    s = await startTestServer({ trustProxy: trustedProxies(['127.0.0.2/32']), logger: { level: 'info', stream: log.stream } });
    const spa = await createClient(s.engine, 'spa', { public: true });
    const form = { token: 'tca_unknown', client_id: spa.id };
    const claimed = { 'x-forwarded-for': '198.51.100.7, 203.0.113.9' };
    for (const chunked of [false, true]) {
      expect(await postFrom('127.0.0.2', s.url, '/oauth/introspection', form, claimed, chunked)).toBe(200);
      expect(await postFrom('127.0.0.3', s.url, '/oauth/introspection', form, claimed, chunked)).toBe(200);
    }
    const ips = log.lines().filter((l) => l.msg === 'request').map((l) => l.ip);
    expect(ips).toEqual(['203.0.113.9', '127.0.0.3', '203.0.113.9', '127.0.0.3']);
  });

  it('refuses what is not an address, a range or a name', () => {
    expect(() => trustedProxies(['10.0.0.0/8', 'loopback', 'fd00::/8'])).not.toThrow();
    expect(() => trustedProxies(['proxy.internal'])).toThrow(/invalid IP address/);
  });
});
