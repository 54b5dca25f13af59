import { loadTlsFiles, persistentSelfSigned, type TlsMaterial } from './tls.js';
import { plainHttpWarning } from './transport.js';

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
