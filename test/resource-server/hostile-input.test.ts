import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { SigningKeys } from '../../src/events/keys.js';
import { signSet } from '../../src/events/set.js';
import { MemoryStore } from '../../src/store/memory/index.js';
import type { RevocationEvent } from '../../src/store/store.js';
import { IntrospectionUnavailable, ResourceServer, type IntrospectionAnswer, type ResourceServerOptions } from '../../src/resource-server/index.js';

/**
 * An API built on tokenctl/resource-server under hostile input: an unauthenticated push of any
 * size, a server that trickles its introspection answer, a SET replayed or addressed to another
 * receiver, and active tokens meant for another API. Every server here is real, on 127.0.0.1.
 */
const servers: Server[] = [];
let rs: ResourceServer | undefined;
afterEach(async () => {
  await rs?.close();
  rs = undefined;
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    s.close();
  }
});

async function listen(server: Server): Promise<string> {
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const soon = Math.floor(Date.now() / 1000) + 3600;
const active = (jti: string, extra: Partial<IntrospectionAnswer> = {}): IntrospectionAnswer => ({
  active: true,
  jti,
  username: 'alice',
  client_id: 'app',
  token_type: 'access_token',
  scope: 'read',
  exp: soon,
  aud: 'orders-api',
  ...extra,
});

/** tokenctl's introspection and JWKS, answering from `answers`, signing keys of the real transmitter. */
async function transmitter(answers: Map<string, IntrospectionAnswer>) {
  const keys = new SigningKeys(new MemoryStore());
  await keys.ensureCurrent();
  let introspections = 0;
  const url = await listen(
    createServer((req, res) => {
      if (req.url === '/jwks') return void keys.jwks().then((k) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(k)));
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        introspections++;
        const token = new URLSearchParams(body).get('token') ?? '';
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answers.get(token) ?? { active: false }));
      });
    }),
  );
  const sign = async (id: string, audience: string, events: RevocationEvent[]) => signSet({ id, events }, 'https://tokenctl.example', audience, await keys.current(), Date.now());
  return { url, sign, introspections: () => introspections };
}

function pushOptions(url: string, extra: Partial<ResourceServerOptions> = {}): ResourceServerOptions {
  return { url, clientId: 'rs', clientSecret: 's3cret', events: 'push', audience: 'orders-api', issuer: 'https://tokenctl.example', jwksUrl: `${url}/jwks`, cache: { maxAgeMs: 600_000 }, onError: () => undefined, ...extra };
}

/** Streams `total` bytes of body to `url` (declared or chunked) and says what came back and how much was written. */
function bigPost(url: string, total: number, declare: boolean): Promise<{ status: number; written: number }> {
  return new Promise((resolve) => {
    let written = 0;
    let status = 0;
    const chunk = Buffer.alloc(1 << 20, 0x61);
    const req = request(url, { method: 'POST', headers: { 'content-type': 'application/secevent+jwt', ...(declare ? { 'content-length': String(total) } : {}) } }, (res) => {
      status = res.statusCode ?? 0;
      res.resume();
    });
    const done = () => resolve({ status, written });
    req.on('error', done);
    req.on('close', done);
    const pump = () => {
      while (written < total) {
        written += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      req.end();
    };
    pump();
  });
}

describe('the push handler under hostile input', () => {
  it('refuses a 200 MB push with 413 and never reads it, declared or chunked; memory stays flat', async () => {
    const t = await transmitter(new Map());
    rs = new ResourceServer(pushOptions(t.url));
    const endpoint = await listen(createServer(rs.pushHandler()));
    const before = process.memoryUsage();
    for (const declare of [true, false]) {
      const { status, written } = await bigPost(endpoint, 200 << 20, declare);
      expect(status).toBe(413);
      // Refused at the limit (1 MiB) and the connection closed: what was written is what the socket buffers took.
      expect(written).toBeLessThan(64 << 20);
    }
    const after = process.memoryUsage();
    expect(after.arrayBuffers + after.heapUsed - (before.arrayBuffers + before.heapUsed)).toBeLessThan(100 << 20);
  });

  it('reads at most a few pushes at once: the next is 503 with Retry-After, as the transmitter retries', async () => {
    const t = await transmitter(new Map());
    rs = new ResourceServer(pushOptions(t.url));
    const endpoint = await listen(createServer(rs.pushHandler()));
    const held = Array.from({ length: 4 }, () => request(endpoint, { method: 'POST', headers: { 'content-length': '100' } }));
    for (const h of held) {
      h.on('error', () => undefined);
      h.write('eyJ');
    }
    await new Promise((r) => setTimeout(r, 100));
    const fifth = await fetch(endpoint, { method: 'POST', body: 'x' });
    expect([fifth.status, fifth.headers.get('retry-after')]).toEqual([503, '1']);
    for (const h of held) h.destroy();
  });

  it('applies a SET once: a replay is acknowledged (202) and drops nothing more', async () => {
    const answers = new Map([['tok-a', active('j-a')]]);
    const t = await transmitter(answers);
    rs = new ResourceServer(pushOptions(t.url));
    const endpoint = await listen(createServer(rs.pushHandler()));
    const push = (body: string) => fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/secevent+jwt' }, body });
    const set = await t.sign('e-1', 'orders-api', [{ id: 'e-1', at: Date.now(), reason: 'revoked', scope: 'client', clientId: 'app' }]);

    expect(await rs.verify('tok-a')).not.toBeNull();
    expect((await push(set)).status).toBe(202);
    expect(rs.stats()).toMatchObject({ events: 1, dropped: 1, replays: 0 });
    // The token introspected again after the event (a new one of the same client, still active) is cached...
    expect(await rs.verify('tok-a')).not.toBeNull();
    const asked = t.introspections();
    // ...and the captured SET, posted again and again, never drops it: no introspection storm.
    for (let i = 0; i < 5; i++) expect((await push(set)).status).toBe(202);
    expect(await rs.verify('tok-a')).not.toBeNull();
    expect(t.introspections()).toBe(asked);
    expect(rs.stats()).toMatchObject({ events: 1, dropped: 1, replays: 5 });
  });

  it('refuses a SET tokenctl signed for another receiver (400 invalid_audience), and push needs an audience', async () => {
    const answers = new Map([['tok-a', active('j-a')]]);
    const t = await transmitter(answers);
    expect(() => new ResourceServer(pushOptions(t.url, { audience: undefined }))).toThrow(/needs audience/);
    rs = new ResourceServer(pushOptions(t.url));
    const endpoint = await listen(createServer(rs.pushHandler()));
    await rs.verify('tok-a');
    const other = await t.sign('e-2', 'billing-api', [{ id: 'e-2', at: Date.now(), reason: 'revoked', scope: 'client', clientId: 'app' }]);
    const pushed = await fetch(endpoint, { method: 'POST', body: other });
    expect(pushed.status).toBe(400);
    expect(((await pushed.json()) as { err: string }).err).toBe('invalid_audience');
    expect(rs.stats()).toMatchObject({ events: 0, dropped: 0 });
  });
});

describe('introspection under hostile timing', () => {
  it('a server dribbling a byte every 100 ms cannot hold a check past the timeout: 503, never a pass', async () => {
    const dribbles: NodeJS.Timeout[] = [];
    const url = await listen(
      createServer((req, res) => {
        req.resume();
        res.writeHead(200, { 'content-type': 'application/json' });
        const body = JSON.stringify(active('j-slow')) + ' '.repeat(200);
        let i = 0;
        const timer = setInterval(() => (i < body.length ? res.write(body[i++]) : (clearInterval(timer), res.end())), 100);
        dribbles.push(timer);
        res.on('close', () => clearInterval(timer));
      }),
    );
    rs = new ResourceServer({ url, clientId: 'rs', clientSecret: 's3cret', events: false, introspectionTimeoutMs: 300, onError: () => undefined });
    const started = Date.now();
    const outcome = await rs.verify('tok-slow').then(
      () => 'accepted',
      (e: unknown) => e,
    );
    const ms = Date.now() - started;
    for (const d of dribbles) clearInterval(d);
    expect(outcome).toBeInstanceOf(IntrospectionUnavailable);
    // Each byte comes well within the timeout: only a deadline for the whole answer ends it (the body would take 25 s).
    expect(ms).toBeGreaterThanOrEqual(285);
    expect(ms).toBeLessThan(1500);
  });

  it('an answer larger than 1 MiB is an error, not kept in memory', async () => {
    const url = await listen(createServer((req, res) => (req.resume(), res.writeHead(200).end('{"active":true,"x":"' + 'a'.repeat(2 << 20) + '"}'))));
    rs = new ResourceServer({ url, clientId: 'rs', clientSecret: 's3cret', events: false, onError: () => undefined });
    await expect(rs.verify('tok-big')).rejects.toBeInstanceOf(IntrospectionUnavailable);
  });
});

describe('which active tokens an API accepts', () => {
  async function withAnswers(options: Partial<ResourceServerOptions>) {
    const answers = new Map([
      ['for-us', active('j-1')],
      ['for-billing', active('j-2', { aud: 'billing-api' })],
      ['for-both', active('j-3', { aud: ['billing-api', 'orders-api'] })],
      ['no-aud', active('j-4', { aud: undefined })],
      ['from-shop', active('j-5', { client_id: 'shop' })],
    ]);
    const t = await transmitter(answers);
    rs = new ResourceServer({ url: t.url, clientId: 'rs', clientSecret: 's3cret', events: false, ...options });
    const verdicts: Record<string, boolean> = {};
    for (const token of answers.keys()) verdicts[token] = (await rs.verify(token)) !== null;
    return verdicts;
  }

  it('with an audience configured, only tokens meant for it: the check is on by default', async () => {
    expect(await withAnswers({ audience: 'orders-api' })).toEqual({ 'for-us': true, 'for-billing': false, 'for-both': true, 'no-aud': false, 'from-shop': true });
    expect(rs!.stats().foreign).toBe(2);
  });

  it('accept: another audience, several, none (false), and the clients whose tokens are accepted', async () => {
    expect(await withAnswers({ audience: 'orders-receiver', accept: { audience: ['billing-api'] } })).toMatchObject({ 'for-us': false, 'for-billing': true, 'for-both': true });
    await rs!.close();
    expect(await withAnswers({ audience: 'orders-api', accept: { audience: false } })).toMatchObject({ 'for-billing': true, 'no-aud': true });
    await rs!.close();
    expect(await withAnswers({ accept: { clientIds: ['shop'] } })).toEqual({ 'for-us': false, 'for-billing': false, 'for-both': false, 'no-aud': false, 'from-shop': true });
    await rs!.close();
    // Without an audience or accept: any active access token, as before.
    expect(Object.values(await withAnswers({})).every(Boolean)).toBe(true);
  });
});
