import type { AddressInfo } from 'node:net';
import type { FastifyServerOptions } from 'fastify';
import { ServeError } from './errors.js';
import type { Engine } from '../engine/engine.js';
import type { AnswerObserver } from '../http/observer.js';
import { trustedProxies } from '../http/client-address.js';
import { DEFAULT_READINESS_TIMEOUT_MS, type Readiness } from '../http/readiness.js';
import type { OpenStoreOptions } from '../store/open-store.js';
import { buildServer, type ConnectionLimits, type TokenctlApp } from '../http/server.js';
import type { TlsMaterial } from './tls.js';
import { baseUrl } from './transport.js';

export interface StartOptions {
  engine: Engine;
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** Serve HTTPS with this key and certificate; plain HTTP without. */
  tls?: TlsMaterial;
  logger?: FastifyServerOptions['logger'];
  /** Make the engine's issuer (`iss`, RFC 8414 `issuer`) the URL the server listens on. */
  issuerFromUrl: boolean;
  /** Connection limits (`--max-connections`); the defaults of `http/server.ts` otherwise. */
  connections?: Partial<ConnectionLimits>;
  /** Told of every answer (metrics, traces). */
  observer?: AnswerObserver;
  /** `--trust-proxy`: the proxies whose `X-Forwarded-For` names the client (checked by {@link checkTrustProxy}). */
  trustProxy?: readonly string[];
  /** What `/health/ready` answers, drained on SIGTERM; the server's own default without. */
  readiness?: Readiness;
  /** The longest a request waits on the engine before its 503 (`--db-timeout` + 1 s). */
  requestDeadlineMs?: number;
  /** How long in-flight requests may take to finish on shutdown; default 10 s. */
  shutdownGraceMs?: number;
}

export interface RunningServer {
  app: TokenctlApp;
  /** The base URL clients use, with the real port. */
  url: string;
  /** Stops accepting, lets in-flight requests finish, then closes every connection. */
  close(): Promise<void>;
}

/** `--db-timeout` + 1 s: the longest a request waits on the store, whatever the database does (operations.md). */
export function requestDeadline(storeOptions: OpenStoreOptions | undefined): number {
  return (storeOptions?.statementTimeoutMs ?? DEFAULT_READINESS_TIMEOUT_MS) + 1_000;
}

/** Builds the app (`http/server.ts`) and listens. The store stays open: its owner closes it. */
export async function startServer(options: StartOptions): Promise<RunningServer> {
  const { engine, host, port, tls } = options;
  const trustProxy = options.trustProxy?.length ? trustedProxies(options.trustProxy) : undefined;
  const app = buildServer({ engine, logger: options.logger, connections: options.connections, observer: options.observer, trustProxy, readiness: options.readiness, requestDeadlineMs: options.requestDeadlineMs, ...(tls ? { https: { key: tls.key, cert: tls.cert } } : {}) });
  try {
    await app.listen({ host, port, listenTextResolver: (address) => `server listening at ${address}` });
  } catch (err) {
    await app.close().catch(() => undefined);
    throw listenError(err as NodeJS.ErrnoException, host, port);
  }
  const url = baseUrl(tls ? 'https' : 'http', host, (app.server.address() as AddressInfo).port);
  // Before any request is read: listen() resolved, connections are handled on later turns.
  if (options.issuerFromUrl) engine.config.issuer = url;
  const graceMs = options.shutdownGraceMs ?? 10_000;
  return { app, url, close: () => closeGracefully(app, graceMs) };
}

async function closeGracefully(app: TokenctlApp, graceMs: number): Promise<void> {
  // close() waits for every connection to end. A keep-alive connection whose request finishes
  // during shutdown becomes idle only then, and Node would keep it up to keepAliveTimeout + 1 s:
  // close idle connections as they appear, and everything after the grace period.
  const sweep = setInterval(() => app.server.closeIdleConnections(), 50);
  const deadline = setTimeout(() => app.server.closeAllConnections(), graceMs);
  sweep.unref();
  deadline.unref();
  try {
    await app.close();
  } finally {
    clearInterval(sweep);
    clearTimeout(deadline);
  }
}

/** Refuses a `--trust-proxy` value that is not an address, a CIDR range or one of proxy-addr's names, before anything is opened. */
export function checkTrustProxy(values: readonly string[] | undefined): void {
  if (!values?.length) return;
  try {
    trustedProxies(values);
  } catch (err) {
    throw new ServeError(`--trust-proxy: ${(err as Error).message}`, 'bad_trust_proxy', 'usage', 'give addresses or CIDR ranges (10.0.0.0/8, fd00::/8), or loopback, linklocal, uniquelocal');
  }
}

function listenError(err: NodeJS.ErrnoException, host: string, port: number): Error {
  switch (err.code) {
    case 'EADDRINUSE':
      return new ServeError(`port ${port} on ${host} is already in use`, 'address_in_use', 'failure', 'choose another with --port, or --port 0 for a free one');
    case 'EACCES':
      return new ServeError(`not allowed to listen on ${host}:${port}`, 'address_denied', 'failure', 'ports below 1024 need privileges: use --port 8443');
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
      return new ServeError(`cannot listen on ${host}: no such address on this machine`, 'bad_host', 'usage', 'use --host 127.0.0.1, or 0.0.0.0 for every interface');
    default:
      return err;
  }
}
