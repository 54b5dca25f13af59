import { isIP } from 'node:net';
import { hostname } from 'node:os';
import { CliError, EXIT } from '../cli/errors.js';

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
  throw new CliError(
    `refusing to serve plain HTTP on ${host}: tokens and client passwords would cross the network unencrypted`,
    EXIT.usage,
    'tls_required',
    'add --tls-cert FILE --tls-key FILE (or --tls-self-signed for development); --insecure-http only behind a TLS-terminating proxy; or --host 127.0.0.1 for local use',
  );
}

/** The base URL clients use: a wildcard address is replaced by this host's name. */
export function baseUrl(scheme: 'http' | 'https', host: string, port: number): string {
  let name = host === '0.0.0.0' || host === '::' || host === '' ? hostname() : host;
  if (isIP(name) === 6) name = `[${name}]`;
  return `${scheme}://${name}:${port}`;
}
