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
  /** Holds each request this long before answering (0: answers at once); one whose sender died meanwhile is not recorded. */
  holdMs = 0;
  /** Requests received so far (answered or not). */
  arrived = 0;
  /** Held requests whose connection closed before the answer. */
  abandoned = 0;
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
        this.arrived++;
        if (this.holdMs > 0) {
          setTimeout(() => (res.destroyed || req.socket.destroyed ? this.abandoned++ : answer()), this.holdMs);
          return;
        }
        answer();
      });
      const answer = (): void => {
        if (this.unavailable) {
          this.refused++;
          res.writeHead(503).end();
          return;
        }
        const set = Buffer.concat(chunks).toString('utf8');
        const claims = JSON.parse(Buffer.from(set.split('.')[1]!, 'base64url').toString('utf8'));
        this.accepted.push({ set, claims, authorization: req.headers.authorization, contentType: req.headers['content-type'] });
        res.writeHead(202).end();
      };
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

  /** The distinct revocations (their `jti`, else their subject) of the accepted SETs, however they were grouped. */
  revocationIds(): string[] {
    const list = this.accepted.flatMap((s) => (s.claims.events?.['urn:tokenctl:secevent:tokens-revoked']?.revocations ?? []) as RevocationClaims[]);
    return [...new Set(list.map((r) => (r.jti as string | undefined) ?? `${r.scope}:${subjectOf(r)}`))];
  }

  /** Resolves once `n` distinct revocations arrived, in however many SETs; rejects after `timeoutMs`. */
  async waitForRevocations(n: number, timeoutMs: number): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (this.revocationIds().length < n) {
      if (Date.now() > until) throw new Error(`${this.revocationIds().length} of ${n} revocations arrived within ${timeoutMs} ms (refused ${this.refused})`);
      await new Promise((r) => setTimeout(r, 50));
    }
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

/** One revocation of a SET, as the wire carries it. */
export type RevocationClaims = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** The subject of a revocation by its scope: what `sub_id` names when it is a SET's only one. */
export function subjectOf(r: RevocationClaims): string | undefined {
  return ({ token: r.jti, grant: r.grant_id, user: r.username, client: r.client_id } as Record<string, string | undefined>)[r.scope as string];
}

/**
 * The revocations of these SETs' claims, in order (however the store grouped them), every SET
 * checked for the wire format: a non-empty `revocations` list, `toe` the latest revocation's time
 * (seconds), `sub_id` the subject when it holds exactly one revocation, else the SET's `txn` as an
 * opaque subject (SSF §3.1 asks a `sub_id` of every SET; docs/events.md).
 */
export function revocationsOf(claims: Record<string, any>[]): RevocationClaims[] { // eslint-disable-line @typescript-eslint/no-explicit-any
  return claims.flatMap((c) => {
    const list = c.events?.['urn:tokenctl:secevent:tokens-revoked']?.revocations as RevocationClaims[] | undefined;
    if (!Array.isArray(list) || list.length === 0) throw new Error(`SET ${c.jti} has no revocations`);
    if (c.toe !== Math.floor(Math.max(...list.map((r) => r.at as number)) / 1000)) throw new Error(`SET ${c.jti}: toe ${c.toe} is not its latest revocation's time`);
    const expected = list.length === 1 ? { format: 'opaque', id: subjectOf(list[0]!) } : { format: 'opaque', id: c.txn };
    if (typeof c.txn !== 'string' || c.txn === '') throw new Error(`SET ${c.jti} has no txn`);
    if (JSON.stringify(c.sub_id) !== JSON.stringify(expected)) throw new Error(`SET ${c.jti}: sub_id ${JSON.stringify(c.sub_id)}, expected ${JSON.stringify(expected)}`);
    return list;
  });
}

/**
 * Resolves once `receiver list` (as `list` reads it) shows nothing pending, then after a moment for
 * a push still on the loopback wire: with every delivery settled in the store, nothing more is sent,
 * so a test need not wait a fixed second to see that nothing more comes.
 */
export async function allSettled(list: () => Promise<{ pending: number }[]>, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while ((await list()).some((r) => r.pending > 0)) {
    if (Date.now() > until) throw new Error(`deliveries still pending after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
  await new Promise((r) => setTimeout(r, 200));
}
