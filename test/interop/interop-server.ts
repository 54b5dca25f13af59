import { Agent } from 'node:https';
import { selfSignedCertificate } from '../../src/serve/tls.js';
import { createClient, fetchTrusting, HOUR, issue, startTestServer, type Client, type TestServer } from '../helpers/server.js';
import type { TokenResponse } from '../../src/engine/results.js';

/**
 * The server every interop suite drives: `buildServer` on a real TLS socket (127.0.0.1, port 0,
 * a self-signed certificate made for the run), the fast path and fastify as in production, an
 * in-memory store and a manual clock (spec 7.1, an expired refresh token, is reached by moving
 * the clock, never by sleeping). The issuer is the URL it listens on, as `serve` does without
 * `--issuer`. Each library trusts the certificate the way its own documentation says: a custom
 * fetch, or an https Agent with `ca`.
 */
export interface InteropServer {
  s: TestServer;
  url: string;
  /** The PEM certificate the server presents. */
  ca: string;
  /** A fetch that trusts `ca` (for libraries that take a custom fetch). */
  fetch: typeof fetch;
  /** An https.Agent that trusts `ca` (for libraries on node:https). */
  agent: Agent;
  /** A confidential client with a generated secret. */
  web: Client;
  /** A confidential client whose secret has a `:`, a `+`, a `%` and a space (an operator's --secret). */
  odd: Client;
  /** A public client (spec scenario II). */
  spa: Client;
  /** A confidential client that only introspects: a resource server. */
  api: Client;
  /** A grant of `client`; with `expired`, its refresh token has expired (the clock is moved past it). */
  grant(client: Client): Promise<TokenResponse>;
  /** Runs `fn` with the clock two hours on, where a grant made with `shortLived` has expired. */
  afterExpiry<T>(fn: () => Promise<T>): Promise<T>;
  shortLived(client: Client): Promise<TokenResponse>;
  close(): Promise<void>;
}

export const ODD_SECRET = 'p:ss+w%rd 2026 with:colons+and%25';

export async function startInteropServer(): Promise<InteropServer> {
  const tls = await selfSignedCertificate('127.0.0.1');
  const s = await startTestServer({ https: { key: tls.key, cert: tls.cert } });
  s.engine.config.issuer = s.url;
  const [web, odd, spa, api] = await Promise.all([
    createClient(s.engine, 'web-app'),
    createClient(s.engine, 'odd-app', { secret: ODD_SECRET }),
    createClient(s.engine, 'spa-app', { public: true }),
    createClient(s.engine, 'api-gateway'),
  ]);
  const agent = new Agent({ ca: tls.cert, keepAlive: false });
  const start = s.clock.now();
  return {
    s,
    url: s.url,
    ca: tls.cert,
    fetch: fetchTrusting(tls.cert),
    agent,
    web,
    odd,
    spa,
    api,
    grant: (client) => issue(s.engine, client),
    shortLived: (client) => issue(s.engine, client, { accessTtlMs: HOUR, refreshTtlMs: HOUR }),
    async afterExpiry(fn) {
      s.clock.set(start + 2 * HOUR);
      try {
        return await fn();
      } finally {
        s.clock.set(start);
      }
    },
    async close() {
      agent.destroy();
      await s.close();
    },
  };
}
