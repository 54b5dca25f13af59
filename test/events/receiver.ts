import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { compactVerify, createLocalJWKSet, decodeProtectedHeader, type JSONWebKeySet } from 'jose';
import { selfSignedCertificate } from '../../src/serve/tls.js';

/** One SET as a receiver got it. */
export interface ReceivedSet {
  set: string;
  /** The payload, decoded (not verified: see {@link verifySets}). */
  claims: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  authorization: string | undefined;
  contentType: string | undefined;
}

/**
 * A real RFC 8935 push receiver over HTTPS (node:https, a self-signed certificate that is its own
 * CA): records every SET, answers 202, or 503 while `unavailable`, and can go down (its port
 * closed) and come back on the same port.
 */
export class TestReceiver {
  /** Accepted SETs, in the order they arrived (duplicates included). */
  readonly accepted: ReceivedSet[] = [];
  /** Attempts answered 503. */
  refused = 0;
  unavailable = false;
  caFile = '';
  url = '';
  private server: Server | undefined;
  private port = 0;
  private tls: { key: string; cert: string } | undefined;

  static async start(dir: string): Promise<TestReceiver> {
    const r = new TestReceiver();
    r.tls = await selfSignedCertificate('127.0.0.1');
    r.caFile = join(dir, 'receiver-ca.pem');
    writeFileSync(r.caFile, r.tls.cert);
    await r.up();
    r.url = `https://127.0.0.1:${r.port}/events`;
    return r;
  }

  /** Listens (again, on the same port once it had one). */
  async up(): Promise<void> {
    const server = createServer({ key: this.tls!.key, cert: this.tls!.cert }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (this.unavailable) {
          this.refused++;
          res.writeHead(503).end();
          return;
        }
        const set = Buffer.concat(chunks).toString('utf8');
        const claims = JSON.parse(Buffer.from(set.split('.')[1]!, 'base64url').toString('utf8'));
        this.accepted.push({ set, claims, authorization: req.headers.authorization, contentType: req.headers['content-type'] });
        res.writeHead(202).end();
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  /** Closes the port: connections are refused until {@link up}. */
  async down(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }

  /** The distinct event ids received, in first-arrival order. */
  eventIds(): string[] {
    return [...new Set(this.accepted.map((s) => s.claims.jti as string))];
  }

  duplicates(): number {
    return this.accepted.length - this.eventIds().length;
  }

  /** Resolves once `n` distinct events arrived; rejects after `timeoutMs`. */
  async waitFor(n: number, timeoutMs: number): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (this.eventIds().length < n) {
      if (Date.now() > until) throw new Error(`${this.eventIds().length} of ${n} events arrived within ${timeoutMs} ms (refused ${this.refused})`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** Verifies every SET with the JWKS the server publishes (`typ`, `alg`, signature); returns their claims. */
export async function verifySets(serverUrl: string, sets: ReceivedSet[]): Promise<Record<string, any>[]> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const jwks = (await (await fetch(`${serverUrl}/.well-known/jwks.json`)).json()) as JSONWebKeySet;
  const keys = createLocalJWKSet(jwks);
  const out = [];
  for (const s of sets) {
    const header = decodeProtectedHeader(s.set);
    if (header.typ !== 'secevent+jwt' || header.alg !== 'ES256') throw new Error(`bad SET header ${JSON.stringify(header)}`);
    const { payload } = await compactVerify(s.set, keys);
    out.push(JSON.parse(new TextDecoder().decode(payload)));
  }
  return out;
}
