import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Why the metrics listener could not start. The metrics layer knows nothing of exit codes: the
 * command maps `kind` to one (usage: an address the operator should change; failure: anything else).
 */
export class MetricsListenError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly kind: 'usage' | 'failure',
    readonly hint: string,
  ) {
    super(message);
    this.name = 'MetricsListenError';
  }
}

/** A scrape's body and content type. */
export type MetricsSource = () => Promise<{ contentType: string; body: string }>;

export interface MetricsListener {
  /** `http://host:port/metrics`, with the real port. */
  url: string;
  close(): Promise<void>;
}

/**
 * The metrics listener (`serve --metrics-port`): plain HTTP, apart from the token endpoints so
 * that it can stay on loopback or an admin network, `GET /metrics` only. A scrape that fails (a
 * worker that does not answer) gets 503 with the reason, never a partial page.
 */
export async function startMetricsListener(host: string, port: number, source: MetricsSource): Promise<MetricsListener> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?', 1)[0];
    if (path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: metrics are at /metrics\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('method not allowed\n');
      return;
    }
    source().then(
      ({ contentType, body }) => res.writeHead(200, { 'content-type': contentType }).end(req.method === 'HEAD' ? undefined : body),
      (error: unknown) => res.writeHead(503, { 'content-type': 'text/plain' }).end(`metrics unavailable: ${error instanceof Error ? error.message : String(error)}\n`),
    );
  });
  server.keepAliveTimeout = 5_000;
  // Never what keeps serve running: a start that fails after it must still end the process.
  server.unref();
  await new Promise<void>((resolve, reject) => {
    const failed = (error: NodeJS.ErrnoException): void => reject(listenError(error, host, port));
    server.once('error', failed);
    server.listen(port, host, () => {
      server.off('error', failed);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shownHost}:${address.port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function listenError(error: NodeJS.ErrnoException, host: string, port: number): Error {
  if (error.code === 'EADDRINUSE') return new MetricsListenError(`metrics: port ${port} on ${host} is already in use`, 'address_in_use', 'failure', 'choose another with --metrics-port, or 0 for a free one');
  if (error.code === 'EADDRNOTAVAIL' || error.code === 'ENOTFOUND') return new MetricsListenError(`metrics: cannot listen on ${host}: no such address on this machine`, 'bad_host', 'usage', 'use --metrics-host 127.0.0.1');
  return error;
}
