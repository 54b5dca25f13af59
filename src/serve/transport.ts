import { isIP } from 'node:net';
import { hostname } from 'node:os';
import { ServeError } from './errors.js';
import { loadTlsFiles, persistentSelfSigned, type TlsMaterial } from './tls.js';

/*
 * How `serve` talks to its clients (contract 3): HTTPS with the operator's certificate or a
 * development one, or plain HTTP on loopback (or anywhere with --insecure-http), and the base URL
 * it is reached at.
 */

export interface TransportFlags {
  host: string;
  tlsCert?: string;
  tlsKey?: string;
  tlsSelfSigned?: boolean;
  insecureHttp?: boolean;
  /** `--demo` without a TLS choice means a self-signed certificate (the spec says HTTPS). */
  demo?: boolean;
}

export interface Transport {
  tls?: TlsMaterial;
  /** What to warn the operator about (plain HTTP). */
  warning?: string;
}

/**
 * Contract 3's choice of transport: `--tls-cert/--tls-key`, `--tls-self-signed` (kept in
 * `certDir`), or plain HTTP on loopback with a warning, or anywhere with `--insecure-http`.
 * Throws, saying how to fix it, for plain HTTP on another address.
 */
export async function chooseTransport(flags: TransportFlags, certDir: string): Promise<Transport> {
  if (flags.tlsCert && flags.tlsKey) return { tls: loadTlsFiles(flags.tlsCert, flags.tlsKey) };
  if (flags.tlsSelfSigned || (flags.demo && !flags.insecureHttp)) return { tls: await persistentSelfSigned(certDir, flags.host) };
  return { warning: plainHttpWarning(flags.host, flags.insecureHttp ?? false) };
}

/** True for names and addresses that never leave this machine. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost' || h.endsWith('.localhost') || h === '::1') return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  return h === '::ffff:127.0.0.1';
}

/**
 * Contract 3: plain HTTP only on a loopback address (with a warning) or with `--insecure-http`.
 * Returns the warning to print, or throws when plain HTTP is not allowed here.
 */
export function plainHttpWarning(host: string, insecureHttp: boolean): string {
  if (isLoopback(host)) {
    return `serving plain HTTP on ${host} (loopback only). The spec says HTTPS: use --tls-self-signed for a development certificate, or --tls-cert/--tls-key`;
  }
  if (insecureHttp) {
    return `serving plain HTTP on ${host} because of --insecure-http: tokens and client passwords cross the network unencrypted unless a TLS proxy sits in front`;
  }
  throw new ServeError(`refusing to serve plain HTTP on ${host}: tokens and client passwords would cross the network unencrypted`, 'tls_required', 'usage', 'add --tls-cert FILE --tls-key FILE (or --tls-self-signed for development); --insecure-http only behind a TLS-terminating proxy; or --host 127.0.0.1 for local use');
}

/**
 * What the operator should hear about the metrics listener's address (`--metrics-host`), if
 * anything: off loopback it is plain HTTP without authentication.
 */
export function metricsListenerWarning(metrics: { host: string; clientLabel: boolean } | undefined): string | undefined {
  if (metrics === undefined || isLoopback(metrics.host)) return undefined;
  return `the metrics listener on ${metrics.host} is plain HTTP without authentication: it shows traffic and error rates${metrics.clientLabel ? ' and client ids' : ''}; keep it on an admin network or behind a firewall`;
}

/** The base URL clients use: a wildcard address is replaced by this host's name. */
export function baseUrl(scheme: 'http' | 'https', host: string, port: number): string {
  let name = host === '0.0.0.0' || host === '::' || host === '' ? hostname() : host;
  if (isIP(name) === 6) name = `[${name}]`;
  return `${scheme}://${name}:${port}`;
}
