import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import type { IntrospectionAnswer, RevokedTokens } from '../../src/resource-server/index.js';

/**
 * A stand-in for tokenctl's introspection and event endpoints, speaking common.md's wire format
 * exactly (RFC 7662 answers, RFC 8936 polling, ES256 SETs, the JWKS): what lets the module's
 * tests control timing (an introspection held while an event arrives, a stream that fails, a
 * rotated key) that a real server cannot be made to show on demand. The end-to-end tests run
 * against a real `serve`.
 */
export interface FakeTransmitter {
  url: string;
  issuer: string;
  /** Introspection answers by token (absent: inactive). */
  answers: Map<string, IntrospectionAnswer>;
  /** Introspection requests received. */
  introspections: number;
  /** Poll requests received, their bodies. */
  polls: Record<string, unknown>[];
  /** When set, introspection waits for this before answering. */
  holdIntrospection: Promise<void> | undefined;
  /** When set, the poll endpoint answers this status. */
  pollStatus: number | undefined;
  /**
   * Queues a SET of one revocation or several (signed with the current key, or `forge` to forge
   * one; `payload` replaces its tokens-revoked payload, for malformed SETs); returns its jti.
   */
  emit(revocations: RevokedTokens | RevokedTokens[], options?: { audience?: string; issuer?: string; forge?: boolean; payload?: unknown }): Promise<string>;
  /** A new current key (the old one leaves the JWKS when `dropOld`). */
  rotate(dropOld?: boolean): Promise<void>;
  /** Events not acknowledged yet. */
  pending(): string[];
  close(): Promise<void>;
}

interface Key {
  kid: string;
  privateKey: CryptoKey;
  publicJwk: JWK;
}

let kidCounter = 0;
async function newKey(): Promise<Key> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const kid = `k${++kidCounter}`;
  return { kid, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' } };
}

export async function startFakeTransmitter(audience = 'rs'): Promise<FakeTransmitter> {
  let keys: Key[] = [await newKey()];
  const queue: { jti: string; jws: string }[] = [];
  const waiters: (() => void)[] = [];
  let counter = 0;


  const body = (req: IncomingMessage) =>
    new Promise<string>((resolve) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    });
  const json = (res: ServerResponse, status: number, value: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(value));
  };

  const fake: FakeTransmitter = {
    url: '',
    issuer: 'https://issuer.example.test',
    answers: new Map(),
    introspections: 0,
    polls: [],
    holdIntrospection: undefined,
    pollStatus: undefined,
    async emit(revocations, options = {}) {
      const jti = `ev-${++counter}`;
      const key = options.forge ? await newKey() : keys[0]!;
      const now = Math.floor(Date.now() / 1000);
      const list = (Array.isArray(revocations) ? revocations : [revocations]).map((r) => ({ at: Date.now(), ...r }));
      const payload = 'payload' in options ? options.payload : { revocations: list };
      const jws = await new SignJWT({ toe: now, ...(list.length === 1 ? { sub_id: { format: 'opaque', id: 'x' } } : {}), events: { 'urn:tokenctl:secevent:tokens-revoked': payload } })
        .setProtectedHeader({ alg: 'ES256', kid: options.forge ? keys[0]!.kid : key.kid, typ: 'secevent+jwt' })
        .setIssuer(options.issuer ?? fake.issuer)
        .setAudience(options.audience ?? audience)
        .setIssuedAt(now)
        .setJti(jti)
        .sign(key.privateKey);
      queue.push({ jti, jws });
      for (const wake of waiters.splice(0)) wake();
      return jti;
    },
    async rotate(dropOld = false) {
      keys = [await newKey(), ...(dropOld ? [] : keys)];
    },
    pending: () => queue.map((e) => e.jti),
    close: () =>
      new Promise((resolve) => {
        for (const wake of waiters.splice(0)) wake();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };

  const server: Server = createServer(async (req, res) => {
    const path = req.url ?? '';
    if (req.method === 'GET' && path === '/.well-known/oauth-authorization-server') return json(res, 200, { issuer: fake.issuer });
    if (req.method === 'GET' && path === '/.well-known/jwks.json') return json(res, 200, { keys: keys.map((k) => k.publicJwk) });
    if (req.method === 'POST' && path === '/oauth/introspection') {
      const form = new URLSearchParams(await body(req));
      fake.introspections++;
      const answer = fake.answers.get(form.get('token') ?? '') ?? { active: false }; // read before the hold: what a slow answer says
      if (fake.holdIntrospection) await fake.holdIntrospection;
      return json(res, 200, answer);
    }
    if (req.method === 'POST' && path === '/events/poll') {
      const request = JSON.parse(await body(req)) as { ack?: string[]; returnImmediately?: boolean; maxEvents?: number };
      fake.polls.push(request);
      if (fake.pollStatus !== undefined) return json(res, fake.pollStatus, { err: 'unavailable' });
      for (const jti of request.ack ?? []) {
        const i = queue.findIndex((e) => e.jti === jti);
        if (i >= 0) queue.splice(i, 1);
      }
      if (queue.length === 0 && request.returnImmediately !== true) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 2000);
          waiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      const max = request.maxEvents ?? 100;
      return json(res, 200, { sets: Object.fromEntries(queue.slice(0, max).map((e) => [e.jti, e.jws])), moreAvailable: queue.length > max });
    }
    json(res, 404, { error: 'not_found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return fake;
}
