import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { selfSignedCertificate } from '../../src/serve/tls.js';
import { BIN } from '../helpers/cli.js';
import { inheritedSettings } from '../helpers/env.js';

/**
 * A real `tokenctl serve` process on a fixed port and certificate, so that it can be killed
 * (SIGKILL) and started again at the same URL, trusted by the same CA.
 */
export interface ServeProcess {
  url: string;
  port: number;
  /** Resolves when it prints that it listens. */
  up: Promise<void>;
  kill9(): Promise<void>;
  stop(): Promise<void>;
  output(): string;
}

export interface Tls {
  certFile: string;
  keyFile: string;
  ca: string;
}

export async function developmentTls(): Promise<Tls> {
  const dir = mkdtempSync(join(tmpdir(), 'tokenctl-rs-tls-'));
  const { key, cert } = await selfSignedCertificate('127.0.0.1');
  writeFileSync(join(dir, 'cert.pem'), cert);
  writeFileSync(join(dir, 'key.pem'), key, { mode: 0o600 });
  return { certFile: join(dir, 'cert.pem'), keyFile: join(dir, 'key.pem'), ca: cert };
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

export function startServe(db: string, tls: Tls, port: number, extra: string[] = []): ServeProcess {
  const home = mkdtempSync(join(tmpdir(), 'tokenctl-rs-home-'));
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', HOME: home, XDG_DATA_HOME: join(home, 'data') };
  for (const key of inheritedSettings(env)) delete env[key];
  const args = ['serve', '--db', db, '--port', String(port), '--tls-cert', tls.certFile, '--tls-key', tls.keyFile, '--log-level', 'warn', ...extra];
  const child: ChildProcess = spawn(process.execPath, [BIN, ...args], { env, cwd: home, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const exited = new Promise<void>((r) => child.on('close', () => r()));
  const up = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start:\n${out}`)), 30_000);
    const check = () => {
      if (/listening on https:\/\//.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.setEncoding('utf8').on('data', (d: string) => ((out += d), check()));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => ((out += d), check()));
    void exited.then(() => reject(new Error(`serve exited:\n${out}`)));
  });
  up.catch(() => undefined);
  return {
    url: `https://127.0.0.1:${port}`,
    port,
    up,
    async kill9() {
      child.kill('SIGKILL');
      await exited;
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
    output: () => out,
  };
}
