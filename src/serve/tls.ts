import { createPrivateKey, X509Certificate } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { createSecureContext } from 'node:tls';
import { ServeError } from './errors.js';

/** A key and certificate in PEM, and where a client finds the certificate to trust, if anywhere. */
export interface TlsMaterial {
  key: string;
  cert: string;
  /** For `--cacert` / `--ca`: the certificate file (the self-signed one, or `--tls-cert`). */
  certFile?: string;
}

/** `--tls-cert` / `--tls-key`: reads both files and checks that they belong together. */
export function loadTlsFiles(certFile: string, keyFile: string): TlsMaterial {
  const cert = readPem(certFile, '--tls-cert');
  const key = readPem(keyFile, '--tls-key');
  try {
    createSecureContext({ key, cert });
  } catch (err) {
    throw new ServeError(`cannot use ${certFile} with ${keyFile}: ${(err as Error).message}`, 'tls_invalid', 'usage', 'give --tls-cert a PEM certificate (chain) and --tls-key its unencrypted PEM private key');
  }
  return { key, cert, certFile };
}

function readPem(file: string, flag: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new ServeError(`cannot read ${flag} ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, 'tls_invalid', 'usage');
  }
}

/** The names a development certificate covers: loopback, this host's name, and `host`. */
export function developmentNames(host: string): string[] {
  return [...new Set(['localhost', '127.0.0.1', '::1', hostname(), host].filter((h) => h !== '' && h !== '0.0.0.0' && h !== '::'))];
}

/**
 * A self-signed certificate for development (`--tls-self-signed`), valid one year, for the
 * names of {@link developmentNames}. ECDSA P-256: fast to make, accepted by curl and Node.
 */
export async function selfSignedCertificate(host: string): Promise<TlsMaterial> {
  const names = developmentNames(host);
  const now = new Date();
  // Loaded only when a certificate is made: most starts never need it.
  const { generate } = await import('selfsigned');
  const pems = await generate([{ name: 'commonName', value: `tokenctl development (${hostname()})` }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notBeforeDate: new Date(now.getTime() - 60_000),
    notAfterDate: new Date(now.getTime() + 365 * 86_400_000),
    extensions: [
      // Its own CA, so that a client can trust exactly this certificate (--cacert, --ca).
      { name: 'basicConstraints', cA: true },
      { name: 'keyUsage', digitalSignature: true, keyCertSign: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: names.map((n) => (isIP(n) ? { type: 7 as const, ip: n } : { type: 2 as const, value: n })) },
    ],
  });
  return { key: pems.private, cert: pems.cert };
}

/**
 * `--tls-self-signed`: the development certificate kept in `dir` (the tokenctl data directory),
 * made on first use and reused while it is valid for another week and covers `host`, so that a
 * client trusts it once. The key file is readable by its owner only.
 */
export async function persistentSelfSigned(dir: string, host: string): Promise<TlsMaterial> {
  const base = 'self-signed-' + host.replace(/[^A-Za-z0-9.-]/g, '_');
  const certFile = join(dir, base + '.cert.pem');
  const keyFile = join(dir, base + '.key.pem');
  const existing = reusable(certFile, keyFile, host);
  if (existing) return existing;
  const made = await selfSignedCertificate(host);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeAtomically(keyFile, made.key, 0o600);
  writeAtomically(certFile, made.cert, 0o644);
  return { ...made, certFile };
}

function reusable(certFile: string, keyFile: string, host: string): TlsMaterial | null {
  try {
    const cert = readFileSync(certFile, 'utf8');
    const key = readFileSync(keyFile, 'utf8');
    const x509 = new X509Certificate(cert);
    if (Date.parse(x509.validTo) - Date.now() < 7 * 86_400_000) return null;
    if (!x509.checkPrivateKey(createPrivateKey(key))) return null;
    if (!developmentNames(host).every((n) => (isIP(n) ? x509.checkIP(n) : x509.checkHost(n)) !== undefined)) return null;
    return { key, cert, certFile };
  } catch {
    return null;
  }
}

function writeAtomically(file: string, content: string, mode: number): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, content, { mode });
  renameSync(tmp, file);
}
