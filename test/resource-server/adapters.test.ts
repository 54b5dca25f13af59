import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ResourceServer, type Principal } from '../../src/resource-server/index.js';
import { startFakeTransmitter, type FakeTransmitter } from './fake-transmitter.js';

/**
 * The three adapters with the real packages, on real sockets: Node's http (authenticate +
 * sendUnauthorized), fastify (the hook), express (the middleware). Each answers RFC 6750 §3:
 * 401 with a bare challenge for no token, 401 invalid_token, 400 invalid_request for a malformed
 * header, 403 insufficient_scope, 503 when the token cannot be checked.
 */
let fake: FakeTransmitter;
let rs: ResourceServer;
let down: ResourceServer;
const servers: { name: string; url: string; down: string; close(): Promise<void> }[] = [];

async function listen(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function nodeApp(r: ResourceServer): Server {
  return createServer(async (req, res) => {
    let who: Principal | null;
    try {
      who = await r.authenticate(req);
    } catch {
      res.writeHead(503).end();
      return;
    }
    if (!who) return r.sendUnauthorized(res, req);
    if (req.url === '/write' && !who.scopes.includes('write')) {
      res.writeHead(403, { 'www-authenticate': 'Bearer error="insufficient_scope", scope="write"' }).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ user: who.username }));
  });
}

function expressApp(r: ResourceServer) {
  const app = express();
  app.get('/read', r.express(), (req, res) => {
    res.json({ user: (res.locals['principal'] as Principal).username });
  });
  app.get('/write', r.express({ scopes: ['write'] }), (_req, res) => {
    res.json({ user: (res.locals['principal'] as Principal).username });
  });
  return createServer(app);
}

async function fastifyApp(r: ResourceServer): Promise<{ url: string; close(): Promise<void> }> {
  const app = Fastify();
  app.get('/read', { onRequest: r.fastify() }, async (request) => ({ user: (request as unknown as { principal: Principal }).principal.username }));
  app.get('/write', { onRequest: r.fastify({ scopes: ['write'] }) }, async (request) => ({ user: (request as unknown as { principal: Principal }).principal.username }));
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, close: () => app.close() };
}

beforeAll(async () => {
  fake = await startFakeTransmitter();
  fake.answers.set('reader', { active: true, jti: 'j1', username: 'alice', client_id: 'app', token_type: 'access_token', scope: 'read' });
  fake.answers.set('writer', { active: true, jti: 'j2', username: 'bob', client_id: 'app', token_type: 'access_token', scope: 'read write' });
  rs = new ResourceServer({ url: fake.url, clientId: 'rs', clientSecret: 'x', realm: 'api' });
  down = new ResourceServer({ url: 'http://127.0.0.1:1', clientId: 'rs', clientSecret: 'x', events: false, realm: 'api' });
  for (const [name, make] of [
    ['node http', nodeApp],
    ['express', expressApp],
  ] as const) {
    const up = make(rs);
    const broken = make(down);
    const [u, d] = [await listen(up), await listen(broken)];
    servers.push({ name, url: u, down: d, close: async () => void (up.close(), broken.close()) });
  }
  const [up, broken] = [await fastifyApp(rs), await fastifyApp(down)];
  servers.push({ name: 'fastify', url: up.url, down: broken.url, close: async () => void (await up.close(), await broken.close()) });
});

afterAll(async () => {
  for (const s of servers) await s.close();
  await rs.close();
  await down.close();
  await fake.close();
});

describe.each(['node http', 'express', 'fastify'])('%s adapter', (name) => {
  const server = () => servers.find((s) => s.name === name)!;
  const get = (url: string, authorization?: string) => fetch(url, { headers: authorization ? { authorization } : {} });

  it('lets an active token through with its principal', async () => {
    const res = await get(server().url + '/read', 'Bearer reader');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ user: 'alice' });
  });

  it('answers 401 with a bare challenge without a token, and invalid_token for an inactive one', async () => {
    const none = await get(server().url + '/read');
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer realm="api"');
    const bad = await get(server().url + '/read', 'Bearer nope');
    expect(bad.status).toBe(401);
    expect(bad.headers.get('www-authenticate')).toMatch(/^Bearer realm="api", error="invalid_token"/);
  });

  it('answers 400 invalid_request for a malformed bearer header', async () => {
    const res = await get(server().url + '/read', 'Bearer two words');
    expect(res.status).toBe(400);
    expect(res.headers.get('www-authenticate')).toMatch(/error="invalid_request"/);
  });

  it('answers 403 insufficient_scope when a scope is missing', async () => {
    expect((await get(server().url + '/write', 'Bearer writer')).status).toBe(200);
    const res = await get(server().url + '/write', 'Bearer reader');
    expect(res.status).toBe(403);
    expect(res.headers.get('www-authenticate')).toMatch(/error="insufficient_scope".*scope="write"/);
  });

  it('answers 503 when the token cannot be checked', async () => {
    expect((await get(server().down + '/read', 'Bearer reader')).status).toBe(503);
  });
});
