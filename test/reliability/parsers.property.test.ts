import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSpecAuthorization, isPlausibleClientId, isRegistrableClientId, parseBasicAuthorization } from '../../src/engine/client-auth.js';
import { InvalidClientError, InvalidRequestError } from '../../src/engine/errors.js';
import { formBodyParser, parseForm } from '../../src/http/form.js';
import { UnsupportedMediaTypeError } from '../../src/http/transport-errors.js';
import { createClient, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Property-based tests (fast-check) of the two parsers every request goes through, and of the
 * server as a whole under arbitrary requests:
 * - `parseBasicAuthorization` (spec part 5, RFC 6749 §2.3.1): any header either parses to a
 *   plausible client id with distinct non-empty candidate passwords, or is refused with
 *   InvalidClientError (a 401), never anything else; the spec's and RFC 6749's headers round-trip;
 * - the form parser (`parseForm`, `formBodyParser`): any bytes under any Content-Type either parse
 *   or are refused with InvalidRequestError (400) or UnsupportedMediaTypeError (415); well-formed
 *   forms round-trip; a repeated name is always refused;
 * - the server: arbitrary bodies, media types and Authorization headers over real sockets get a
 *   4xx or 200 in the endpoint's record shape, never a 500.
 *
 * The engine's state machine (random sequences of issue, refresh, revoke, clock advances past
 * expiry, and introspection, checked against a model) is test/engine/state-machine.test.ts.
 */

const RUNS = 400;

/** Well-formed Unicode (no lone surrogates): what UTF-8 can carry. */
const text = (maxLength = 40) => fc.string({ unit: 'binary', maxLength }).filter((s) => Buffer.from(s, 'utf8').toString('utf8') === s);
const b64 = (s: string | Uint8Array) => Buffer.from(s).toString('base64');
/** RFC 6749 appendix B: application/x-www-form-urlencoded, space as +. */
const formEncode = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');
const registrableId = fc
  .string({ unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~!$&\'()*,;=@é東🙂'.split(/(?:)/u)), minLength: 1, maxLength: 60 })
  .filter(isRegistrableClientId);

/** Headers a client could send: free text, and text shaped like Basic credentials. */
const authorizationHeader = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 80 }),
  fc.string({ unit: 'binary', maxLength: 80 }).map((s) => 'Basic ' + s),
  fc.uint8Array({ maxLength: 60 }).map((bytes) => 'Basic ' + b64(bytes)),
  fc.tuple(text(), fc.constantFrom(':', '', '::'), text()).map(([a, sep, b]) => 'Basic ' + b64(a + sep + b)),
  fc.tuple(fc.constantFrom('Basic', 'basic', 'BASIC', 'Bearer', 'Digest', ''), fc.constantFrom(' ', '  ', '\t', ''), fc.string({ maxLength: 40 })).map(([s, sp, v]) => s + sp + v),
);

function outcome<T>(f: () => T): { ok: true; value: T } | { ok: false; error: unknown } {
  try {
    return { ok: true, value: f() };
  } catch (error) {
    return { ok: false, error };
  }
}

describe('parseBasicAuthorization (spec part 5, RFC 6749 §2.3.1)', () => {
  it('any header: a plausible client with distinct non-empty candidates, or InvalidClientError', () => {
    fc.assert(
      fc.property(authorizationHeader, (header) => {
        const r = outcome(() => parseBasicAuthorization(header));
        if (!r.ok) {
          expect(r.error).toBeInstanceOf(InvalidClientError);
          return;
        }
        expect(isPlausibleClientId(r.value.clientId)).toBe(true);
        expect(new Set(r.value.secrets).size).toBe(r.value.secrets.length);
        for (const secret of r.value.secrets) expect(secret).not.toBe('');
      }),
      { numRuns: RUNS * 3 },
    );
  });

  it('scenario I round-trips: base64(id ":" base64(password)) names the id, and the password first', () => {
    fc.assert(
      fc.property(registrableId, text(80).filter((p) => p !== ''), (id, password) => {
        const parsed = parseBasicAuthorization(buildSpecAuthorization(id, password));
        expect(parsed.clientId).toBe(id);
        expect(parsed.secrets[0]).toBe(password);
      }),
      { numRuns: RUNS },
    );
  });

  it('scenario II round-trips: base64(id ":") is a public client with no password', () => {
    fc.assert(
      fc.property(registrableId, (id) => {
        expect(parseBasicAuthorization(buildSpecAuthorization(id))).toEqual({ clientId: id, secrets: [] });
      }),
      { numRuns: RUNS },
    );
  });

  it('RFC 6749 §2.3.1 round-trips: base64(urlencode(id) ":" urlencode(password)), any case of "Basic"', () => {
    fc.assert(
      fc.property(registrableId, text(80).filter((p) => p !== ''), fc.constantFrom('Basic', 'basic', 'BASIC'), (id, password, scheme) => {
        const parsed = parseBasicAuthorization(`${scheme} ${b64(`${formEncode(id)}:${formEncode(password)}`)}`);
        expect(parsed.clientId).toBe(id);
        expect(parsed.secrets).toContain(password);
      }),
      { numRuns: RUNS },
    );
  });

  it('a credential without a colon, or with an empty id, is always refused', () => {
    fc.assert(
      fc.property(text(), fc.boolean(), (s, leadingColon) => {
        const credential = leadingColon ? ':' + s : s.replace(/:/g, '');
        expect(() => parseBasicAuthorization('Basic ' + b64(credential))).toThrow(InvalidClientError);
      }),
      { numRuns: RUNS },
    );
  });
});

/** Form bodies: random bytes, and random sequences of the pieces forms are made of. */
const formish = fc
  .array(
    fc.oneof(
      fc.constantFrom('&', '=', '+', '%', '%2', '%zz', '%00', '%C3', '%C3%A9', '%ED%A0%80', '%FF', 'token', 'client_id', 'token_type_hint', '__proto__', ';'),
      fc.string({ maxLength: 8 }),
      fc.uint8Array({ maxLength: 4 }).map((b) => Buffer.from(b).toString('latin1')),
    ),
    { maxLength: 30 },
  )
  .map((parts) => parts.join(''));
const bodyBytes = fc.oneof(
  fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)),
  formish.map((s) => Buffer.from(s, 'utf8')),
  formish.map((s) => Buffer.from(s, 'latin1')),
);
const contentType = fc.oneof(
  fc.constant(undefined),
  fc.constantFrom(
    'application/x-www-form-urlencoded',
    'application/x-www-form-urlencoded; charset=utf-8',
    'application/x-www-form-urlencoded;charset="UTF-8"',
    'application/x-www-form-urlencoded; charset=latin1',
    'application/x-www-form-urlencoded; charset=',
  ),
  fc.string({ maxLength: 60 }).map((s) => 'application/x-www-form-urlencoded;' + s),
  fc.string({ maxLength: 60 }),
);

describe('the form parser (contract 3, RFC 6749 §3.1 and appendix B)', () => {
  it('any string: a form, or InvalidRequestError', () => {
    fc.assert(
      fc.property(fc.oneof(formish, fc.string({ unit: 'binary', maxLength: 200 })), (body) => {
        const r = outcome(() => parseForm(body));
        if (!r.ok) expect(r.error).toBeInstanceOf(InvalidRequestError);
        else expect(Object.getPrototypeOf(r.value)).toBeNull();
      }),
      { numRuns: RUNS * 3 },
    );
  });

  it('any bytes under any Content-Type: a form, InvalidRequestError or UnsupportedMediaTypeError', () => {
    fc.assert(
      fc.property(contentType, bodyBytes, (type, body) => {
        const r = outcome(() => formBodyParser(type, body));
        if (!r.ok) expect(r.error instanceof InvalidRequestError || r.error instanceof UnsupportedMediaTypeError, String(r.error)).toBe(true);
      }),
      { numRuns: RUNS * 3 },
    );
  });

  it('well-formed forms round-trip, whichever encoder made them', () => {
    const pairs = fc.uniqueArray(fc.tuple(text(20), text(60)), { selector: ([name]) => name, maxLength: 8 });
    const noNul = ([name, value]: [string, string]) => !name.includes('\u0000') && !value.includes('\u0000');
    fc.assert(
      fc.property(pairs.map((p) => p.filter(noNul)), fc.boolean(), (entries, viaUrlSearchParams) => {
        const body = viaUrlSearchParams
          ? new URLSearchParams(entries).toString()
          : entries.map(([n, v]) => `${encodeURIComponent(n)}=${encodeURIComponent(v)}`).join('&');
        const parsed = formBodyParser('application/x-www-form-urlencoded', Buffer.from(body, 'utf8'));
        // As maps: an object lists integer-like names first, whatever the order they came in.
        expect(new Map(Object.entries(parsed))).toEqual(new Map(entries));
      }),
      { numRuns: RUNS },
    );
  });

  it('a name given twice is always refused, whatever the values and their encoding', () => {
    fc.assert(
      fc.property(text(20).filter((n) => !n.includes('\u0000')), text(), text(), fc.boolean(), (name, a, b, encodeFully) => {
        const enc = (s: string) => (encodeFully ? [...Buffer.from(s, 'utf8')].map((x) => '%' + x.toString(16).padStart(2, '0')).join('') : encodeURIComponent(s));
        const body = `${encodeURIComponent(name)}=${encodeURIComponent(a.split('\u0000').join(''))}&${enc(name)}=${encodeURIComponent(b.split('\u0000').join(''))}`;
        expect(() => parseForm(body)).toThrow(/more than once/);
      }),
      { numRuns: RUNS },
    );
  });
});

describe('the server under arbitrary requests (real sockets)', () => {
  let s: TestServer;
  const statuses = new Map<number, number>();

  beforeAll(async () => {
    s = await startTestServer();
    await createClient(s.engine, 'web');
    await createClient(s.engine, 'pub', { public: true });
  });
  afterAll(async () => {
    await s?.close();
  });

  /** Forms built of the endpoints' own parameter names, with values real, wrong and odd. */
  const structured = fc
    .record(
      {
        grant_type: fc.constantFrom('refresh_token', 'password', ''),
        refresh_token: fc.oneof(fc.constant('tcr_' + 'A'.repeat(43)), fc.string({ maxLength: 30 })),
        token: fc.oneof(fc.constant('tca_' + 'A'.repeat(43)), fc.string({ maxLength: 30 })),
        token_type_hint: fc.constantFrom('access_token', 'refresh_token', 'ACCESS_TOKEN', ''),
        client_id: fc.oneof({ weight: 8, arbitrary: fc.constantFrom('web', 'pub', 'ghost') }, { weight: 1, arbitrary: fc.string({ maxLength: 20 }) }),
        client_secret: fc.constantFrom('wrong-password-1', 'wrong-password-2', ''),
        scope: fc.string({ maxLength: 10 }),
      },
      { requiredKeys: [] },
    )
    .map((form) => Buffer.from(new URLSearchParams(form as Record<string, string>).toString()));
  const header = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 60 }).map((s) => s.trim());
  const request = fc.record({
    path: fc.constantFrom('/oauth/token', '/oauth/revocation', '/oauth/introspection'),
    type: fc.oneof({ weight: 4, arbitrary: fc.constant('application/x-www-form-urlencoded') }, { weight: 1, arbitrary: header }),
    body: fc.oneof(bodyBytes, structured),
    authorization: fc.option(fc.oneof(header, header.map((h) => 'Basic ' + h), fc.constantFrom(buildSpecAuthorization('web', 'wrong-password-1'), buildSpecAuthorization('pub'))), { nil: undefined }),
  });

  it('never answers 500, and always in the endpoint’s record shape', async () => {
    await fc.assert(
      fc.asyncProperty(request, async ({ path, type, body, authorization }) => {
        const headers: Record<string, string> = { 'content-type': type };
        if (authorization !== undefined) headers.authorization = authorization;
        const res = await fetch(s.url + path, { method: 'POST', headers, body });
        const text = await res.text();
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        expect([200, 400, 401, 413, 415], text).toContain(res.status);
        const json = JSON.parse(text) as Record<string, unknown>;
        if (res.status === 200) return;
        if (path === '/oauth/token') expect(Object.keys(json).sort()).toEqual(['error', 'error_description']);
        else expect(json).toMatchObject({ status: res.status, path });
      }),
      {
        numRuns: 300,
        // Besides the random ones: requests that reach the engine, so that 200 is always among the answers.
        examples: [
          [{ path: '/oauth/introspection', type: 'application/x-www-form-urlencoded', body: Buffer.from('token=x&token_type_hint=access_token&client_id=pub'), authorization: undefined }],
          [{ path: '/oauth/revocation', type: 'application/x-www-form-urlencoded', body: Buffer.from('token=x&token_type_hint=refresh_token'), authorization: buildSpecAuthorization('pub') }],
        ],
      },
    );
    // The generators reach every kind of answer, so the property is not vacuous.
    expect([...statuses.keys()].sort()).toEqual(expect.arrayContaining([200, 400, 401, 415]));
    // And the server is still right afterwards.
    const issued = await s.engine.issue({ clientId: 'pub', username: 'after' }); // its own: a public client sees no other
    const r = await fetch(s.url + '/oauth/introspection', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: issued.access_token, token_type_hint: 'access_token', client_id: 'pub' }),
    });
    expect(await r.json()).toMatchObject({ active: true, username: 'after' });
  });
});
