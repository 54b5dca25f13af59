import { Agent } from 'node:https';
import { selfSignedCertificate } from '../../src/serve/tls.js';
import { createClient, fetchTrusting, HOUR, issue, startTestServer, type Client, type Door, type TestServer } from '../helpers/server.js';
import type { TokenResponse } from '../../src/engine/results.js';
import type { TokenctlApp } from '../../src/http/server.js';

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

export async function startInteropServer(options: { devLogin?: boolean } = {}): Promise<InteropServer> {
  const tls = await selfSignedCertificate('127.0.0.1');
  const s = await startTestServer({ https: { key: tls.key, cert: tls.cert }, devLogin: options.devLogin ?? false });
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

/** The redirect URI the login clients register: any loopback port matches (RFC 8252 §7.3). */
export const LOOPBACK_REDIRECT = 'http://127.0.0.1/callback';

/**
 * The interop server with the development login (`serve --dev-login`), and the clients of the
 * authorization code flow and of client credentials (contract 5).
 */
export interface LoginInteropServer extends InteropServer {
  /** A confidential client that logs users in (authorization code with PKCE, then refresh). */
  webLogin: Client;
  /** A public client that logs users in (a native or single-page app: PKCE, no secret). */
  spaLogin: Client;
  /** A confidential client with the client credentials grant only, scope `reports` (a cron job). */
  cron: Client;
  /** The fetch a library is given to reach the server through `door`. */
  fetchThrough(door: Door): typeof fetch;
}

export async function startLoginInteropServer(): Promise<LoginInteropServer> {
  const t = await startInteropServer({ devLogin: true });
  const made = (id: string, input: { public?: boolean; scope?: string; redirectUris?: string[]; grantTypes?: string[] }) =>
    t.s.engine.createClient({ id, name: id, scope: 'read write', orgId: 'org-' + id, audience: 'https://api.example.test', ...input }, 'test').then((r) => ({ id, secret: r.client_secret }));
  const [webLogin, spaLogin, cron] = await Promise.all([
    made('web-login', { redirectUris: [LOOPBACK_REDIRECT] }),
    made('spa-login', { public: true, redirectUris: [LOOPBACK_REDIRECT] }),
    made('cron-job', { scope: 'reports', grantTypes: ['client_credentials'] }),
  ]);
  const injected = fetchThroughFastify(t.s.app);
  return { ...t, webLogin, spaLogin, cron, fetchThrough: (door) => (door === 'fastify' ? injected : t.fetch) };
}

/**
 * A `fetch` answered by fastify's `inject`: the server's second door (its routes, never the fast
 * path), for libraries that take a custom fetch. The URL's origin is ignored.
 */
export function fetchThroughFastify(app: TokenctlApp): typeof fetch {
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(input instanceof Request ? input.url : input);
    const headers = Object.fromEntries(new Headers(init?.headers).entries());
    const body = init?.body === undefined || init.body === null ? undefined : String(init.body instanceof URLSearchParams ? init.body.toString() : init.body);
    const method = (init?.method ?? 'GET') as 'GET' | 'POST' | 'HEAD';
    const r = await app.inject({ method, url: url.pathname + url.search, headers, payload: body });
    const h = new Headers();
    for (const [name, value] of Object.entries(r.headers)) if (value !== undefined) h.set(name, Array.isArray(value) ? value.join(', ') : String(value));
    return new Response(r.statusCode === 204 || r.statusCode === 304 ? null : r.rawPayload, { status: r.statusCode, headers: h });
  }) as typeof fetch;
}
