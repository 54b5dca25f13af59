import { spawn } from 'node:child_process';
import { createPrivateKey } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { exportJWK, importJWK, type CryptoKey, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../../src/engine/engine.js';
import { buildServer, type TokenctlApp } from '../../src/http/server.js';
import { ResourceServer, type HeadersLike } from '../../src/resource-server/index.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import type { TokenStore } from '../../src/store/store.js';
import { createClient, issue, ROOT, tempStore, type TempStore } from '../helpers/cli.js';
import { ath, dpopKey, makeProof, type DpopKey, type ProofClaims } from '../helpers/dpop.js';
import { freePort } from '../resource-server/serve-process.js';

/**
 * DPoP from the client's side against a real tokenctl (its HTTP stack and engine in this process,
 * with server nonces on, on the SQLite store the built CLI also opens): `refresh --url
 * --dpop-key` gets a bound token (retrying with the server's nonce), `introspect --url` shows the
 * binding, and the resource-server module accepts that token only with a proof of its key. A
 * stolen bound token, presented without the private key, gets nothing.
 */
const API = 'https://api.example.test';
let store: TempStore;
let serverStore: TokenStore;
let app: TokenctlApp;
let url: string;
let web: { id: string; secret: string | null };
let rsClient: { id: string; secret: string | null };
let rs: ResourceServer;
let keyFile: string;
let key: DpopKey;

/** The key of the file the CLI signs with, for the proofs the test makes to the API. */
async function keyOf(file: string): Promise<DpopKey> {
  const jwk = JSON.parse(readFileSync(file, 'utf8')) as JWK;
  const privateKey = (await importJWK(jwk, 'ES256')) as CryptoKey;
  const publicJwk = await exportJWK(createPrivateKey({ key: jwk as import('node:crypto').JsonWebKey, format: 'jwk' }));
  const { d: _d, ...pub } = publicJwk;
  const { calculateJwkThumbprint } = await import('jose');
  return { privateKey, publicJwk: pub, privateJwk: jwk, jkt: await calculateJwkThumbprint(pub, 'sha256'), alg: 'ES256' };
}

beforeAll(async () => {
  store = tempStore();
  [web, rsClient] = await Promise.all([createClient(store), createClient(store)]);
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  serverStore = await SqliteStore.open(store.db);
  // The issuer is the URL the CLI calls: the server checks a proof's htu against it.
  app = buildServer({ engine: new Engine({ store: serverStore, issuer: url, node: 'srv', dpopNonceSecret: 'a nonce secret of at least thirty-two characters' }) });
  await app.listen({ host: '127.0.0.1', port });
  rs = new ResourceServer({ url, clientId: rsClient.id, clientSecret: rsClient.secret!, events: false, dpop: { origin: API } });
  keyFile = join(store.dir, 'dpop.jwk');
  const generated = await store.run(['refresh', (await issue(store, web.id, 'alice')).refresh_token, ...remote(), '--dpop-key', 'generate', '--dpop-key-out', keyFile, '--json']);
  expect(generated.code, generated.stderr).toBe(0);
  key = await keyOf(keyFile);
}, 60_000);
afterAll(async () => {
  await rs?.close();
  await app?.close();
  await serverStore?.close();
  store?.cleanup();
});

const remote = () => ['--url', url, '--client-id', web.id, '--client-secret', web.secret!];
const apiRequest = async (authorization: string, proof?: string, path = '/orders'): Promise<HeadersLike> => ({ headers: { authorization, ...(proof && { dpop: proof }) }, method: 'GET', url: path });
const proofFor = (k: DpopKey, token: string, extra: Partial<ProofClaims> = {}) => makeProof(k, { iatMs: Date.now(), htm: 'GET', htu: `${API}/orders`, ath: ath(token), ...extra });

describe('refresh --url --dpop-key against tokenctl', () => {
  let bound: { access_token: string; token_type: string };

  beforeAll(async () => {
    const r = await store.run(['refresh', (await issue(store, web.id, 'alice')).refresh_token, ...remote(), '--dpop-key', keyFile, '--json']);
    expect(r.code, r.stderr).toBe(0);
    bound = r.json();
    // Neither output carries the private key.
    const d = (JSON.parse(readFileSync(keyFile, 'utf8')) as JWK).d!;
    expect(r.stdout + r.stderr).not.toContain(d);
    expect(r.stderr).toContain(`DPoP key thumbprint (cnf.jkt) ${key.jkt}`);
    expect(r.stderr).toContain('the server bound the tokens to it');
  }, 30_000);

  it('gets token_type DPoP, the server asking for its nonce first (one retry)', () => {
    expect(bound.token_type).toBe('DPoP');
  });

  it('introspect --url shows the binding (cnf.jkt) in its human output', async () => {
    const r = await store.run(['introspect', bound.access_token, ...remote()], { env: { NO_COLOR: '1' } });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`cnf\\.jkt:\\s+${key.jkt}`));
  });

  it('with a generated in-memory key: bound, and told that the key dies with the command', async () => {
    const r = await store.run(['refresh', (await issue(store, web.id, 'bob')).refresh_token, ...remote(), '--dpop-key', 'generate']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/token_type:\s+DPoP/);
    expect(r.stderr).toContain('kept in memory only');
  });

  it('refuses --dpop-key without --url, and a key file that is not a private key', async () => {
    const local = await store.run(['refresh', (await issue(store, web.id, 'carol')).refresh_token, '--dpop-key', keyFile]);
    expect([local.code, local.stderr]).toEqual([2, expect.stringContaining('--dpop-key goes with --url')]);
    const junk = await store.run(['refresh', 'tcr_x', ...remote(), '--dpop-key', store.db]);
    expect(junk.code).toBe(2);
    expect(junk.stderr).toContain('is not a private key as a JWK or PEM');
  });

  it('the resource-server module accepts the bound token with a proof of its key', async () => {
    expect(await rs.check(await apiRequest(`DPoP ${bound.access_token}`, await proofFor(key, bound.access_token)))).toMatchObject({ ok: true, principal: { jkt: key.jkt, clientId: web.id } });
  });

  it('a stolen bound token presented without the private key gets nothing from the module', async () => {
    const thief = await dpopKey();
    const token = bound.access_token;
    const attempts: [string, HeadersLike, string][] = [
      ['as Bearer', await apiRequest(`Bearer ${token}`), 'invalid_token'],
      ['as DPoP without a proof', await apiRequest(`DPoP ${token}`), 'invalid_dpop_proof'],
      ['with a proof of another key', await apiRequest(`DPoP ${token}`, await proofFor(thief, token)), 'invalid_token'],
      ['with a captured proof for another token (ath)', await apiRequest(`DPoP ${token}`, await proofFor(key, 'tca_another')), 'invalid_dpop_proof'],
      ['with a captured proof for another URL (htu)', await apiRequest(`DPoP ${token}`, await proofFor(key, token, { htu: `${API}/admin` })), 'invalid_dpop_proof'],
      ['with a captured proof for another method (htm)', await apiRequest(`DPoP ${token}`, await proofFor(key, token, { htm: 'DELETE' })), 'invalid_dpop_proof'],
      ['with an old captured proof (iat)', await apiRequest(`DPoP ${token}`, await proofFor(key, token, { iatMs: Date.now() - 300_000 })), 'invalid_dpop_proof'],
    ];
    for (const [name, request, error] of attempts) {
      const result = await rs.check(request);
      expect(result, name).toMatchObject({ ok: false, refusal: { status: 401, body: { error } } });
    }
    // A proof captured from a request the API accepted, replayed: refused as used.
    const proof = await proofFor(key, token);
    expect((await rs.check(await apiRequest(`DPoP ${token}`, proof))).ok).toBe(true);
    expect(await rs.check(await apiRequest(`DPoP ${token}`, proof))).toMatchObject({ ok: false, refusal: { body: { error: 'invalid_dpop_proof' } } });
    // And a module without dpop configured refuses it as a bearer token too.
    const plain = new ResourceServer({ url, clientId: rsClient.id, clientSecret: rsClient.secret!, events: false });
    try {
      expect(await plain.check(await apiRequest(`Bearer ${token}`))).toMatchObject({ ok: false, refusal: { status: 401 } });
      expect(await plain.verify(token)).toBeNull();
    } finally {
      await plain.close();
    }
  });
});

describe('the NGINX example sidecar with RS_DPOP_ORIGIN (without NGINX: the headers its template sets)', () => {
  it('accepts a bound token with a proof for the original method and URI, and refuses it stolen', async () => {
    const r = await store.run(['refresh', (await issue(store, web.id, 'dave')).refresh_token, ...remote(), '--dpop-key', keyFile, '--json']);
    const token = (r.json() as { access_token: string }).access_token;
    const secretFile = join(store.dir, 'sidecar.secret');
    writeFileSync(secretFile, rsClient.secret!, { mode: 0o600 });
    const port = await freePort();
    const env = { ...process.env, TOKENCTL_URL: url, RS_CLIENT_ID: rsClient.id, RS_CLIENT_SECRET_FILE: secretFile, SIDECAR_PORT: String(port), RS_DPOP_ORIGIN: API };
    const sidecar = spawn(process.execPath, [join(ROOT, 'examples/nginx/auth-sidecar.mjs')], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      await new Promise<void>((resolve, reject) => {
        let out = '';
        const timer = setTimeout(() => reject(new Error(`the sidecar did not start:\n${out}`)), 15_000);
        const on = (d: Buffer) => ((out += d.toString()), /listening on/.test(out) && (clearTimeout(timer), resolve()));
        sidecar.stdout.on('data', on);
        sidecar.stderr.on('data', on);
      });
      // What NGINX sends to /check: the client's headers, and the two it sets itself.
      const check = (headers: Record<string, string>) => fetch(`http://127.0.0.1:${port}/check`, { headers: { 'x-original-method': 'DELETE', 'x-original-uri': '/orders/7?force=1', ...headers } });
      const proof = (k: DpopKey, extra: Partial<ProofClaims> = {}) => makeProof(k, { iatMs: Date.now(), htm: 'DELETE', htu: `${API}/orders/7`, ath: ath(token), ...extra });
      const ok = await check({ authorization: `DPoP ${token}`, dpop: await proof(key) });
      expect([ok.status, ok.headers.get('x-user')]).toEqual([204, 'dave']);
      const bearer = await check({ authorization: `Bearer ${token}` });
      expect(bearer.status).toBe(401);
      const otherUri = await check({ authorization: `DPoP ${token}`, dpop: await proof(key, { htu: `${API}/orders/8` }) });
      expect([otherUri.status, otherUri.headers.get('www-authenticate')]).toEqual([401, expect.stringMatching(/^DPoP realm="api", error="invalid_dpop_proof"/)]);
      const otherKey = await check({ authorization: `DPoP ${token}`, dpop: await proof(await dpopKey()) });
      expect(otherKey.status).toBe(401);
    } finally {
      sidecar.kill('SIGTERM');
    }
  }, 30_000);
});
