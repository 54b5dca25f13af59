import { STATUS_CODES } from 'node:http';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSpecAuthorization } from '../../src/engine/client-auth.js';
import type { TokenResponse } from '../../src/engine/results.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { SystemTimeClock, tempDir } from '../helpers/load.js';
import { rawExchange, type RawAnswer } from '../helpers/raw-http.js';
import { captureLog, createClient, startTestServer, type Client, type TestServer } from '../helpers/server.js';

/**
 * Whatever a network sends (the issue's "bad input"): for each of the three endpoints, a table of
 * malformed requests, sent as exact bytes on a socket to the real server on a SQLite file. Each
 * must be answered with the right 4xx in the endpoint's record shape (contract 3: the RFC 6749
 * record at /oauth/token, spec 7.2's everywhere else), never a 500, never with an injected header.
 * A second table sends well-formed requests carrying hostile values (SQL, CRLF, huge and tiny
 * tokens), which must get their ordinary answer. After both, the server still does its job, the
 * clients table is intact, the file passes integrity_check, and nothing was logged as an
 * unexpected error.
 *
 * Requests that are not HTTP at all (a bad Content-Length, request smuggling, a CR inside a
 * header, headers past Node's limit) are refused by Node's parser before any route exists: 400 or
 * 431 in the same record and with the same no-store headers as every other refusal, and the
 * connection closed; they are in the table as `unparsable`.
 */

type Ep = 'token' | 'revocation' | 'introspection';
const ENDPOINTS: Ep[] = ['token', 'revocation', 'introspection'];

/** The record expected: a status, and for /oauth/token its RFC 6749 error code. */
interface Refusal {
  status: number;
  /** /oauth/token's `error`; defaults by status. */
  code?: string;
  /** Must appear in the message (records) or description (/oauth/token). */
  says?: RegExp;
}
type Want = Refusal | { unparsable: 400 | 431 };

interface RawRequest {
  method?: string;
  path?: string;
  /** Header lines in order; `null` values drop a default. */
  headers?: [string, string | null][];
  body?: string | Buffer;
  /** Half-close after sending (a body shorter than its Content-Length). */
  end?: boolean;
}

interface Case {
  name: string;
  request: (ep: EpInfo) => RawRequest;
  want: Want | ((ep: Ep) => Want);
}

interface EpInfo {
  ep: Ep;
  path: string;
  /** The name of the token parameter and of the second required one. */
  tokenParam: string;
  other: [string, string];
  /** A valid form (with credentials, for revocation and introspection) and, for /oauth/token, a valid Authorization. */
  form: (overrides?: Record<string, string | null>) => string;
  authorization: string | null;
}

const tmp = tempDir('tokenctl-badinput-');
let s: TestServer;
let store: SqliteStore;
let web: Client;
let pub: Client;
let other: Client;
let grant: TokenResponse;
let othersGrant: TokenResponse;
const log = captureLog();

function info(ep: Ep): EpInfo {
  const path = `/oauth/${ep}`;
  if (ep === 'token') {
    const base = { grant_type: 'refresh_token', refresh_token: grant.refresh_token };
    return { ep, path, tokenParam: 'refresh_token', other: ['grant_type', 'refresh_token'], form: (o) => encode({ ...base, ...o }), authorization: buildSpecAuthorization(web.id, web.secret!) };
  }
  const base = { token: grant.access_token, token_type_hint: 'access_token', client_id: web.id, client_secret: web.secret! };
  return { ep, path, tokenParam: 'token', other: ['token_type_hint', 'access_token'], form: (o) => encode({ ...base, ...o }), authorization: null };
}

function encode(form: Record<string, string | null>): string {
  return Object.entries(form)
    .filter((e): e is [string, string] => e[1] !== null)
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`)
    .join('&');
}

function bytesOf(ep: EpInfo, r: RawRequest): Buffer {
  const body = typeof r.body === 'string' ? Buffer.from(r.body, 'utf8') : (r.body ?? Buffer.from(ep.form()));
  const defaults: [string, string | null][] = [
    ['Host', '127.0.0.1'],
    ['Content-Type', 'application/x-www-form-urlencoded'],
    ['Content-Length', String(body.length)],
    ['Authorization', ep.authorization],
    ['Connection', 'close'],
  ];
  const given = r.headers ?? [];
  const overridden = new Set(given.map(([k]) => k.toLowerCase()));
  const lines = [...defaults.filter(([k]) => !overridden.has(k.toLowerCase())), ...given].filter((h): h is [string, string] => h[1] !== null);
  const head = `${r.method ?? 'POST'} ${r.path ?? ep.path} HTTP/1.1\r\n${lines.map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

/** Sends exact bytes and reads the answer until the server closes; bounded by 5 s. */
function send(port: number, bytes: Buffer, end: boolean): Promise<RawAnswer> {
  return rawExchange(port, bytes, { end });
}

const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');
/** An Authorization header instead of any form credentials. */
const basic = (e: EpInfo, s: string): RawRequest => ({ headers: [['Authorization', s]], body: e.form({ client_id: null, client_secret: null }) });

/** The table of malformed requests: every one a 4xx. */
const MALFORMED: Case[] = [
  // Method and path
  ...['GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'PROPFIND', 'TRACE'].map((method): Case => ({ name: `method ${method}`, request: () => ({ method, body: '' }), want: { status: 405 } })),
  { name: 'method in lower case', request: () => ({ method: 'post' }), want: { unparsable: 400 } },
  { name: 'path with a trailing slash', request: (e) => ({ path: e.path + '/' }), want: { status: 404 } },
  { name: 'path in upper case', request: (e) => ({ path: e.path.toUpperCase() }), want: { status: 404 } },
  { name: 'path with ;parameters', request: (e) => ({ path: e.path + ';jsessionid=1' }), want: { status: 404 } },
  { name: 'path with ../', request: (e) => ({ path: '/oauth/../' + e.path.slice(1) }), want: { status: 404 } },
  { name: 'path with invalid percent-encoding', request: (e) => ({ path: e.path + '%zz' }), want: { status: 400 } },
  { name: 'path with an encoded NUL', request: (e) => ({ path: e.path + '%00' }), want: { status: 404 } },
  // Media type
  { name: 'no Content-Type, with a body', request: () => ({ headers: [['Content-Type', null]] }), want: { status: 415 } },
  { name: 'no Content-Type, no body', request: () => ({ headers: [['Content-Type', null]], body: '' }), want: { status: 415 } },
  { name: 'application/json', request: () => ({ headers: [['Content-Type', 'application/json']], body: '{"token":"x"}' }), want: { status: 415 } },
  { name: 'text/plain', request: () => ({ headers: [['Content-Type', 'text/plain']] }), want: { status: 415 } },
  { name: 'multipart/form-data', request: () => ({ headers: [['Content-Type', 'multipart/form-data; boundary=x']], body: '--x--' }), want: { status: 415 } },
  { name: 'charset=iso-8859-1', request: () => ({ headers: [['Content-Type', 'application/x-www-form-urlencoded; charset=iso-8859-1']] }), want: { status: 415 } },
  { name: 'charset=utf-16', request: () => ({ headers: [['Content-Type', 'application/x-www-form-urlencoded; charset=utf-16']] }), want: { status: 415 } },
  { name: 'a media type with a suffix', request: () => ({ headers: [['Content-Type', 'application/x-www-form-urlencodedX']] }), want: { status: 415 } },
  { name: 'an empty Content-Type', request: () => ({ headers: [['Content-Type', '']] }), want: { status: 415 } },
  // Sizes and framing
  { name: 'a body of 16 KiB + 1', request: (e) => ({ body: e.form() + '&pad=' + 'a'.repeat(16 * 1024) }), want: { status: 413 } },
  {
    name: 'a chunked body over 16 KiB',
    request: (e) => {
      const big = e.form() + '&pad=' + 'a'.repeat(16 * 1024);
      return { headers: [['Content-Length', null], ['Transfer-Encoding', 'chunked']], body: `${big.length.toString(16)}\r\n${big}\r\n0\r\n\r\n` };
    },
    want: { status: 413 },
  },
  { name: 'a body shorter than its Content-Length', request: (e) => ({ headers: [['Content-Length', String(e.form().length + 50)]], end: true }), want: { unparsable: 400 } },
  { name: 'a non-numeric Content-Length', request: () => ({ headers: [['Content-Length', 'abc']] }), want: { unparsable: 400 } },
  { name: 'Content-Length and Transfer-Encoding (smuggling)', request: () => ({ headers: [['Transfer-Encoding', 'chunked']] }), want: { unparsable: 400 } },
  { name: 'two different Content-Lengths', request: (e) => ({ headers: [['Content-Length', String(e.form().length)], ['Content-Length', '1']] }), want: { unparsable: 400 } },
  { name: 'a CR inside a header value', request: () => ({ headers: [['X-Note', 'a\rSet-Cookie: x=1']] }), want: { unparsable: 400 } },
  { name: 'headers past 16 KiB', request: () => ({ headers: [['X-Pad', 'a'.repeat(20_000)]] }), want: { unparsable: 431 } },
  // Encoding
  { name: 'raw bytes that are not UTF-8', request: (e) => ({ body: Buffer.concat([Buffer.from(e.form() + '&x='), Buffer.from([0xff, 0xfe])]) }), want: { status: 400 } },
  { name: 'overlong UTF-8', request: (e) => ({ body: Buffer.concat([Buffer.from(e.form() + '&x='), Buffer.from([0xc0, 0xaf])]) }), want: { status: 400 } },
  { name: 'a UTF-8 encoded surrogate', request: (e) => ({ body: Buffer.concat([Buffer.from(e.form() + '&x='), Buffer.from([0xed, 0xa0, 0x80])]) }), want: { status: 400 } },
  { name: 'percent-encoding that is not UTF-8', request: (e) => ({ body: e.form() + '&x=%C3%28' }), want: { status: 400, says: /percent-encoded UTF-8/ } },
  { name: 'an invalid percent escape', request: (e) => ({ body: e.form() + '&x=%zz' }), want: { status: 400, says: /percent-encoded UTF-8/ } },
  { name: 'a truncated percent escape', request: (e) => ({ body: e.form() + '&x=%4' }), want: { status: 400 } },
  { name: 'an encoded NUL in a value', request: (e) => ({ body: e.form({ [e.tokenParam]: 'abc\u0000def' }) }), want: { status: 400, says: /NUL/ } },
  { name: 'an encoded NUL in a name', request: (e) => ({ body: e.form() + '&a%00b=1' }), want: { status: 400, says: /NUL/ } },
  { name: 'a raw NUL byte', request: (e) => ({ body: Buffer.concat([Buffer.from(e.form() + '&x=a'), Buffer.from([0]), Buffer.from('b')]) }), want: { status: 400, says: /NUL/ } },
  // Parameters
  { name: 'the token parameter twice', request: (e) => ({ body: e.form() + `&${e.tokenParam}=x` }), want: { status: 400, says: /more than once/ } },
  { name: 'the token parameter twice, differently encoded', request: (e) => ({ body: e.form() + `&${encodeURIComponent(e.tokenParam).replace('t', '%74')}=x` }), want: { status: 400, says: /more than once/ } },
  { name: 'the second parameter twice', request: (e) => ({ body: e.form() + `&${e.other[0]}=${e.other[1]}` }), want: { status: 400, says: /more than once/ } },
  { name: 'the same parameter twice, once empty', request: (e) => ({ body: `${e.other[0]}=&` + e.form() }), want: { status: 400, says: /more than once/ } },
  { name: 'the token parameter missing', request: (e) => ({ body: e.form({ [e.tokenParam]: null }) }), want: { status: 400, says: /missing/ } },
  { name: 'the token parameter empty', request: (e) => ({ body: e.form({ [e.tokenParam]: '' }) }), want: { status: 400, says: /missing/ } },
  // token_type_hint is optional (contract 3): at revocation and introspection the other required parameter is client_id.
  {
    name: 'the second required parameter missing',
    request: (e) => ({ body: e.form({ [e.ep === 'token' ? e.other[0] : 'client_id']: null }) }),
    want: (ep) => ({ status: 400, says: ep === 'token' ? /grant_type is missing/ : /client_id is missing/ }),
  },
  {
    name: 'the second parameter an unknown value',
    request: (e) => ({ body: e.form({ [e.other[0]]: 'password' }) }),
    want: (ep) => (ep === 'token' ? { status: 400, code: 'unsupported_grant_type' } : { status: 400, says: /unsupported_token_type/ }),
  },
  {
    name: 'the second parameter in another case',
    request: (e) => ({ body: e.form({ [e.other[0]]: e.other[1].toUpperCase() }) }),
    want: (ep) => (ep === 'token' ? { status: 400, code: 'unsupported_grant_type' } : { status: 400, says: /unsupported_token_type/ }),
  },
  { name: 'an empty body', request: () => ({ body: '' }), want: { status: 400, says: /missing/ } },
  { name: 'a body of separators only', request: () => ({ body: '&&&' }), want: { status: 400, says: /missing/ } },
  { name: 'an empty parameter name twice', request: (e) => ({ body: e.form() + '&=a&=b' }), want: { status: 400, says: /more than once/ } },
  { name: 'the parameters in the query string instead', request: (e) => ({ path: `${e.path}?${e.form()}`, body: '' }), want: { status: 400, says: /missing/ } },
  { name: '__proto__ and constructor instead of parameters', request: () => ({ body: '__proto__=x&constructor=y&toString=z' }), want: { status: 400, says: /missing/ } },
  // Client authentication
  {
    name: 'no client authentication at all',
    request: (e) => ({ body: e.form({ client_id: null, client_secret: null }), headers: [['Authorization', null]] }),
    want: (ep) => (ep === 'token' ? { status: 401, code: 'invalid_client' } : { status: 400, says: /client_id is missing/ }),
  },
  { name: 'a wrong password', request: (e) => withCredentials(e, web.id, 'wrong-password-123'), want: { status: 401, code: 'invalid_client', says: /incorrect|web-app/ } },
  { name: 'an unknown client', request: (e) => withCredentials(e, 'no-such-client', 'whatever-password-1'), want: { status: 401, code: 'invalid_client' } },
  { name: 'a public client sending a password', request: (e) => withCredentials(e, pub.id, 'a-password-it-has-not'), want: { status: 401, code: 'invalid_client' } },
  { name: 'a confidential client without its password', request: (e) => withCredentials(e, web.id, undefined), want: { status: 401, code: 'invalid_client' } },
  { name: 'a client id of 201 characters', request: (e) => withCredentials(e, 'c'.repeat(201), 'whatever-password-1'), want: { status: 401, code: 'invalid_client' } },
  { name: 'a client id with CR LF and a header', request: (e) => withCredentials(e, `${web.id}\r\nSet-Cookie: stolen=1`, web.secret!), want: { status: 401, code: 'invalid_client' } },
  { name: "a client id ' OR '1'='1", request: (e) => withCredentials(e, "' OR '1'='1", 'whatever-password-1'), want: { status: 401, code: 'invalid_client' } },
  { name: 'a client id that drops a table', request: (e) => withCredentials(e, "x'; DROP TABLE clients; --", 'whatever-password-1'), want: { status: 401, code: 'invalid_client' } },
  { name: 'a password that is SQL', request: (e) => withCredentials(e, web.id, "' OR 1=1 --"), want: { status: 401, code: 'invalid_client' } },
  { name: 'Authorization: Basic and nothing else', request: (e) => basic(e, 'Basic'), want: { status: 401, code: 'invalid_client' } },
  { name: 'Authorization: Basic with text that is not Base64', request: (e) => basic(e, 'Basic !!!!'), want: { status: 401, code: 'invalid_client' } },
  { name: 'Authorization: Basic with Base64 without a colon', request: (e) => basic(e, 'Basic ' + b64('web-app')), want: { status: 401, code: 'invalid_client' } },
  { name: 'Authorization: Basic with an empty client id', request: (e) => basic(e, 'Basic ' + b64(':secret')), want: { status: 401, code: 'invalid_client' } },
  { name: 'Authorization: Basic with two words', request: (e) => basic(e, 'Basic ' + b64('a:b') + ' ' + b64('c:d')), want: { status: 401, code: 'invalid_client' } },
  { name: 'Authorization: Basic of bytes that are not UTF-8', request: (e) => basic(e, 'Basic ' + b64(Buffer.from([0xff, 0x3a, 0xfe]))), want: { status: 401, code: 'invalid_client' } },
  { name: 'Authorization: Basic with non-canonical Base64', request: (e) => basic(e, 'Basic YQ=B'), want: { status: 401, code: 'invalid_client' } },
  { name: 'Authorization: Basic with Base64 missing its padding', request: (e) => basic(e, 'Basic ' + b64('web-app:xy').replace(/=+$/, '')), want: { status: 401, code: 'invalid_client' } },
  { name: 'Authorization: Bearer', request: (e) => basic(e, 'Bearer ' + 'tca_' + 'A'.repeat(43)), want: { status: 401, code: 'invalid_client' } },
  { name: 'Authorization of latin-1 bytes', request: (e) => basic(e, 'Basic \u00ff\u00fe'), want: { status: 401, code: 'invalid_client' } },
  {
    name: 'Authorization: Basic and client_secret both',
    request: (e) => ({ headers: [['Authorization', buildSpecAuthorization(web.id, web.secret!)]], body: e.form({ client_id: null, client_secret: web.secret! }) }),
    want: { status: 400, says: /once/ },
  },
  {
    name: 'Authorization: Basic for one client, client_id for another',
    request: (e) => ({ headers: [['Authorization', buildSpecAuthorization(web.id, web.secret!)]], body: e.form({ client_id: other.id, client_secret: null }) }),
    want: { status: 400, says: /another client/ },
  },
];

/** Credentials in each endpoint's own way: the spec's Basic header at /oauth/token, form parameters elsewhere. */
function withCredentials(e: EpInfo, id: string, secret: string | undefined): RawRequest {
  if (e.ep === 'token') return { headers: [['Authorization', 'Basic ' + b64(secret === undefined ? `${id}:` : `${id}:${b64(secret)}`)]] };
  return { body: e.form({ client_id: id, client_secret: secret ?? null }) };
}

/** Well-formed requests with hostile values: each gets the ordinary answer for a token that is not valid. */
const HOSTILE_TOKENS: [string, () => string][] = [
  ['a one-character token', () => 'a'],
  ['a 15,000-character token', () => 't'.repeat(15_000)],
  ['a token of the right shape that was never issued', () => 'tca_' + 'A'.repeat(43)],
  ["a token ' OR 1=1 --", () => "' OR 1=1 --"],
  ['a token that drops a table', () => "x'); DROP TABLE tokens; --"],
  ['a token with CR LF and a header', () => 'tca_x\r\nSet-Cookie: stolen=1\r\n\r\n<html>'],
  ['a token with emoji and RTL marks', () => '\u{1F600}\u202Etca_\u{1F4A9}'],
  ['a token of JSON', () => '{"active":true}'],
  ['a real token with a space appended', () => grant.access_token + ' '],
  ['a real token with its prefix changed', () => 'tcr_' + grant.access_token.slice(4)],
];

describe('malformed and hostile requests', () => {
  let clientsBefore: number;

  beforeAll(async () => {
    store = await SqliteStore.open(join(tmp.dir, 'tokens.db'));
    s = await startTestServer({ store, clock: new SystemTimeClock(), logger: { level: 'warn', stream: log.stream } });
    web = await createClient(s.engine, 'web-app');
    pub = await createClient(s.engine, 'pub-app', { public: true });
    other = await createClient(s.engine, 'other-app');
    grant = await s.engine.issue({ clientId: web.id, username: 'alice' });
    othersGrant = await s.engine.issue({ clientId: other.id, username: 'bob' });
    clientsBefore = (await store.listClients()).length;
  });

  afterAll(async () => {
    await s?.close();
    await store?.close();
    tmp.cleanup();
  });

  it('has at least 40 malformed requests per endpoint', () => {
    expect(MALFORMED.length).toBeGreaterThanOrEqual(40);
  });

  describe.each(ENDPOINTS)('/oauth/%s', (ep) => {
    it.each(MALFORMED.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
      const e = info(ep);
      const req = c.request(e);
      const r = await send(s.port, bytesOf(e, req), req.end ?? false);
      const want = typeof c.want === 'function' ? c.want(ep) : c.want;
      expect(r.status, r.body).not.toBe(500);
      expect(r.headers['set-cookie']).toBeUndefined();
      if ('unparsable' in want) {
        // Refused by Node's HTTP parser before any route: still the endpoint's record, and the connection closed.
        expect(r.body).not.toMatch(/at \w+ \(|node:internal/);
        expect(r.headers.pragma).toBe('no-cache');
        expect(r.headers.connection).toBe('close');
        expectRefusal(e, r, { status: want.unparsable }, req.path ?? e.path, req.method ?? 'POST', carriesAuthorization(e, req));
        return;
      }
      expectRefusal(e, r, want, req.path ?? e.path, req.method ?? 'POST', carriesAuthorization(e, req));
    });

    it.each(HOSTILE_TOKENS)('%s: the ordinary answer', async (_name, make) => {
      const e = info(ep);
      const token = make();
      const r = await send(s.port, bytesOf(e, { body: e.form({ [e.tokenParam]: token }) }), false);
      expect(r.headers['set-cookie']).toBeUndefined();
      expect(r.headers['content-type']).toMatch(/^application\/json/);
      const body = JSON.parse(r.body) as Record<string, unknown>;
      if (ep === 'token') {
        expect(r.status, r.body).toBe(401);
        expect(body).toEqual({ error: 'invalid_token', error_description: 'The refresh token is invalid: it is not recognised' });
      } else if (ep === 'revocation') {
        expect(r.status, r.body).toBe(200);
        expect(body.code).toBe('token_invalid');
      } else {
        expect(r.status, r.body).toBe(200);
        expect(body).toEqual({ active: false });
      }
    });

    it("another client's token: refused as not recognised, except by introspection (RFC 7662)", async () => {
      const e = info(ep);
      const token = ep === 'token' ? othersGrant.refresh_token : othersGrant.access_token;
      const r = await send(s.port, bytesOf(e, { body: e.form({ [e.tokenParam]: token }) }), false);
      const body = JSON.parse(r.body) as Record<string, unknown>;
      if (ep === 'token') expect([r.status, body.error]).toEqual([401, 'invalid_token']);
      if (ep === 'revocation') expect([r.status, body.code]).toEqual([200, 'token_invalid']);
      if (ep === 'introspection') expect([r.status, body.active, body.client_id]).toEqual([200, true, other.id]);
    });
  });

  it('afterwards the server still works, the store is intact, and nothing was an unexpected error', async () => {
    const url = s.url;
    const creds = { client_id: web.id, client_secret: web.secret! };
    const post = async (path: string, form: Record<string, string>, headers: Record<string, string> = {}) => {
      const res = await fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: new URLSearchParams(form) });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const fresh = await s.engine.issue({ clientId: web.id, username: 'after' });
    expect((await post('/oauth/introspection', { token: fresh.access_token, token_type_hint: 'access_token', ...creds })).body).toMatchObject({ active: true, username: 'after' });
    const refreshed = await post('/oauth/token', { grant_type: 'refresh_token', refresh_token: fresh.refresh_token }, { authorization: buildSpecAuthorization(web.id, web.secret!) });
    expect(refreshed.status).toBe(200);
    expect((await post('/oauth/revocation', { token: fresh.refresh_token, token_type_hint: 'refresh_token', ...creds })).body).toMatchObject({ code: 'token_revoke_success' });
    for (const t of [fresh.refresh_token, fresh.access_token, refreshed.body.access_token as string]) {
      expect((await post('/oauth/introspection', { token: t, token_type_hint: 'access_token', ...creds })).body).toEqual({ active: false });
    }
    // The first grant was never revoked by any of the requests above.
    expect((await post('/oauth/introspection', { token: grant.refresh_token, token_type_hint: 'refresh_token', ...creds })).body).toMatchObject({ active: true });

    expect((await store.listClients()).length).toBe(clientsBefore);
    const db = new Database(store.location, { readonly: true });
    try {
      expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    } finally {
      db.close();
    }
    const errors = log.lines().filter((l) => Number(l.level) >= 50);
    expect(errors).toEqual([]);
  });
});

/** Whether the request bytesOf builds carries an Authorization header (the default one, or one given). */
function carriesAuthorization(e: EpInfo, r: RawRequest): boolean {
  const given = (r.headers ?? []).find(([k]) => k.toLowerCase() === 'authorization');
  return given ? given[1] !== null : e.authorization !== null;
}

function expectRefusal(e: EpInfo, r: RawAnswer, want: Refusal, path: string, method: string, authorized: boolean): void {
  expect(r.status, r.body).toBe(want.status);
  expect(r.headers['cache-control']).toBe('no-store');
  if (want.status === 405) expect(r.headers.allow).toBe('POST');
  // Contract 3: the Basic challenge goes with a 401 invalid_client only after an Authorization header.
  if (want.status === 401 && want.code === 'invalid_client') {
    expect(r.headers['www-authenticate']).toBe(authorized ? 'Basic realm="tokenctl"' : undefined);
  }
  if (method === 'HEAD') return;
  expect(r.headers['content-type']).toMatch(/^application\/json/);
  const body = JSON.parse(r.body) as Record<string, unknown>;
  const recordPath = path.split('?')[0]!;
  if (recordPath === '/oauth/token') {
    expect(Object.keys(body).sort()).toEqual(['error', 'error_description']);
    expect(body.error).toBe(want.code ?? (want.status === 401 ? 'invalid_client' : 'invalid_request'));
    if (want.says) expect(body.error_description).toMatch(want.says);
  } else {
    expect(Object.keys(body).sort()).toEqual(['error', 'message', 'path', 'status', 'timestamp']);
    expect(body.status).toBe(want.status);
    expect(body.error).toBe(STATUS_CODES[want.status]);
    expect(body.timestamp).toMatch(/^\d{13}$/);
    expect(body.path).toBe(recordPath);
    if (want.says) expect(body.message).toMatch(want.says);
  }
}
