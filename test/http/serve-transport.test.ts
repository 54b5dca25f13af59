import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import { MemoryStore } from '../../src/store/memory/index.js';
import { startServer, type RunningServer } from '../../src/serve/listen.js';
import { loadTlsFiles, persistentSelfSigned, selfSignedCertificate } from '../../src/serve/tls.js';
import { baseUrl, chooseTransport, isLoopback, plainHttpWarning } from '../../src/serve/transport.js';
import { answer, postForm } from '../helpers/server.js';

describe('transport policy (contract 3)', () => {
  it.each(['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]', 'app.localhost'])('%s is loopback', (h) => expect(isLoopback(h)).toBe(true));
  it.each(['0.0.0.0', '::', '192.168.1.10', 'example.com', '10.0.0.1'])('%s is not loopback', (h) => expect(isLoopback(h)).toBe(false));

  it('plain HTTP on loopback: allowed with a warning that points to TLS', () => {
    expect(plainHttpWarning('127.0.0.1', false)).toMatch(/plain HTTP.*--tls-self-signed/);
  });

  it('plain HTTP elsewhere: refused with a message saying how to fix it', () => {
    expect(() => plainHttpWarning('0.0.0.0', false)).toThrow(/refusing to serve plain HTTP on 0\.0\.0\.0/);
    try {
      plainHttpWarning('0.0.0.0', false);
    } catch (err) {
      expect((err as { hint?: string }).hint).toMatch(/--tls-cert.*--tls-self-signed.*--insecure-http/);
    }
  });

  it('plain HTTP elsewhere with --insecure-http: allowed, with a warning', () => {
    expect(plainHttpWarning('0.0.0.0', true)).toMatch(/--insecure-http/);
  });

  it('base URLs: brackets for IPv6, the host name for a wildcard', () => {
    expect(baseUrl('https', '::1', 8443)).toBe('https://[::1]:8443');
    expect(baseUrl('http', '127.0.0.1', 1)).toBe('http://127.0.0.1:1');
    expect(baseUrl('https', '0.0.0.0', 443)).not.toContain('0.0.0.0');
  });
});

describe('TLS material', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'tokenctl-tls-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('a self-signed certificate covers loopback and the host', async () => {
    const tls = await selfSignedCertificate('dev.example.test');
    const cert = new X509Certificate(tls.cert);
    expect(cert.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(cert.checkHost('localhost')).toBe('localhost');
    expect(cert.checkHost('dev.example.test')).toBe('dev.example.test');
  });

  it('--tls-self-signed keeps its certificate in the data directory and reuses it', async () => {
    const first = await persistentSelfSigned(dir, '127.0.0.1');
    expect(first.certFile).toBeDefined();
    expect(readFileSync(first.certFile!, 'utf8')).toBe(first.cert);
    expect(statSync(join(dir, 'self-signed-127.0.0.1.key.pem')).mode & 0o077).toBe(0);
    const second = await persistentSelfSigned(dir, '127.0.0.1');
    expect(second.cert).toBe(first.cert);
  });

  it('a kept certificate whose key does not match is made again', async () => {
    const first = await persistentSelfSigned(dir, '127.0.0.1');
    writeFileSync(join(dir, 'self-signed-127.0.0.1.key.pem'), (await selfSignedCertificate('127.0.0.1')).key);
    const second = await persistentSelfSigned(dir, '127.0.0.1');
    expect(second.cert).not.toBe(first.cert);
  });

  it('--tls-cert/--tls-key: loaded and checked together', async () => {
    const [a, b] = await Promise.all([selfSignedCertificate('127.0.0.1'), selfSignedCertificate('127.0.0.1')]);
    writeFileSync(join(dir, 'a.crt'), a.cert);
    writeFileSync(join(dir, 'a.key'), a.key);
    writeFileSync(join(dir, 'b.key'), b.key);
    expect(loadTlsFiles(join(dir, 'a.crt'), join(dir, 'a.key')).cert).toBe(a.cert);
    expect(() => loadTlsFiles(join(dir, 'a.crt'), join(dir, 'b.key'))).toThrow(/cannot use/);
    expect(() => loadTlsFiles(join(dir, 'nope.crt'), join(dir, 'a.key'))).toThrow(/cannot read --tls-cert/);
  });

  it('chooseTransport: --demo alone means HTTPS with the development certificate', async () => {
    const demo = await chooseTransport({ host: '127.0.0.1', demo: true }, dir);
    expect(demo.tls?.certFile).toContain(dir);
    expect(demo.warning).toBeUndefined();
    const plain = await chooseTransport({ host: '127.0.0.1', demo: true, insecureHttp: true }, dir);
    expect(plain.tls).toBeUndefined();
    expect(plain.warning).toMatch(/plain HTTP/);
    await expect(chooseTransport({ host: '0.0.0.0' }, dir)).rejects.toThrow(/refusing/);
  });
});

describe('startServer: listening and graceful shutdown', () => {
  let running: RunningServer | undefined;
  afterEach(async () => {
    await running?.close();
    running = undefined;
  });

  it('port 0: the URL has the real port, and becomes the issuer when none is given', async () => {
    const engine = new Engine({ store: new MemoryStore(), issuer: 'https://placeholder' });
    running = await startServer({ engine, host: '127.0.0.1', port: 0, issuerFromUrl: true });
    expect(running.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(running.url).not.toMatch(/:0$/);
    expect(engine.config.issuer).toBe(running.url);
    const meta = await answer(await fetch(running.url + '/.well-known/oauth-authorization-server'));
    expect(meta.json.issuer).toBe(running.url);
  });

  it('a given issuer is kept', async () => {
    const engine = new Engine({ store: new MemoryStore(), issuer: 'https://auth.example.com' });
    running = await startServer({ engine, host: '127.0.0.1', port: 0, issuerFromUrl: false });
    expect(engine.config.issuer).toBe('https://auth.example.com');
  });

  it('a port in use: a clear error', async () => {
    const engine = new Engine({ store: new MemoryStore() });
    running = await startServer({ engine, host: '127.0.0.1', port: 0, issuerFromUrl: false });
    const port = Number(new URL(running.url).port);
    await expect(startServer({ engine, host: '127.0.0.1', port, issuerFromUrl: false })).rejects.toThrow(/already in use/);
  });

  it('close() lets a request in flight finish, and refuses new connections', async () => {
    const store = new MemoryStore();
    const engine = new Engine({ store });
    await engine.createClient({ id: 'pub', name: 'pub', public: true }, 'test');
    running = await startServer({ engine, host: '127.0.0.1', port: 0, issuerFromUrl: false });
    const url = running.url;

    // Hold the request inside the engine until the server is closing.
    let release!: () => void;
    let entered!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    const gate = new Promise<void>((r) => (release = r));
    const original = store.findTokenByDigest.bind(store);
    store.findTokenByDigest = async (digest) => {
      entered();
      await gate;
      return original(digest);
    };

    const inFlight = postForm(url, '/oauth/introspection', { token: 'tca_' + 'a'.repeat(43), token_type_hint: 'access_token', client_id: 'pub' });
    await inside;
    const closing = running.close();
    running = undefined;
    await expect(fetch(url + '/healthz')).rejects.toThrow();
    release();
    const r = await inFlight;
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ active: false });
    await closing;
  });
});
