import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildSpecAuthorization, formCredentials, isRegistrableClientId, parseBasicAuthorization } from '../../src/engine/client-auth.js';
import { InvalidClientError, InvalidRequestError } from '../../src/engine/errors.js';

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
/** RFC 6749 appendix B: application/x-www-form-urlencoded, space as '+' or as %20. */
const formEncode = (s: string, plusForSpace: boolean) => (plusForSpace ? encodeURIComponent(s).replace(/%20/g, '+') : encodeURIComponent(s));
/** RFC 6749 §2.3.1's header. */
const rfcAuthorization = (id: string, password: string, plusForSpace = false) =>
  'Basic ' + b64(`${formEncode(id, plusForSpace)}:${formEncode(password, plusForSpace)}`);

describe('parseBasicAuthorization', () => {
  it('spec scenario I: Basic base64(id ":" base64(password)); the spec reading is the first candidate', () => {
    const header = 'Basic ' + b64('app:' + b64('s3cret+/=pass word'));
    const parsed = parseBasicAuthorization(header);
    expect(parsed.clientId).toBe('app');
    expect(parsed.secrets[0]).toBe('s3cret+/=pass word');
  });

  it('spec scenario II: Basic base64(id ":"), no password', () => {
    expect(parseBasicAuthorization('Basic ' + b64('public-app:'))).toEqual({ clientId: 'public-app', secrets: [] });
  });

  it('RFC 6749 §2.3.1: url-encoded id and password', () => {
    const parsed = parseBasicAuthorization(rfcAuthorization('app/1 é', 'p@ss w:rd+%', true));
    expect(parsed.clientId).toBe('app/1 é');
    expect(parsed.secrets).toContain('p@ss w:rd+%');
  });

  it('a plain (unencoded) password is a candidate too, and a colon in it is kept', () => {
    const parsed = parseBasicAuthorization('Basic ' + b64('app:pa:ss'));
    expect(parsed).toEqual({ clientId: 'app', secrets: ['pa:ss'] });
  });

  it.each([
    ['a colon escaped, the plus and percent left as they are', 'pa:ss+w%rd', 'pa%3Ass+w%rd'],
    ['a colon escaped, a plus that is not a space', 'a:b+c', 'a%3Ab+c'],
    ['a colon escaped in lower-case hex', 'x:y', 'x%3ay'],
    ['nothing escaped (RFC 7617 as is), with a colon, a plus and a percent', 'p:q+r%zz', 'p:q+r%zz'],
    ['fully form-encoded (RFC 6749 §2.3.1)', 'p:q+r%zz é', encodeURIComponent('p:q+r%zz é')],
  ])('encodings seen in the field: %s', (_what, password, sent) => {
    const parsed = parseBasicAuthorization('Basic ' + b64(`app:${sent}`));
    expect(parsed.clientId).toBe('app');
    expect(parsed.secrets).toContain(password);
  });

  it('only ":" escaped, a literal %25 and %41 kept (the "interop" Basic of @badgateway/oauth2-client)', () => {
    expect(parseBasicAuthorization('Basic ' + b64('app:x%3Ay%41 %25+')).secrets).toContain('x:y%41 %25+');
  });

  it('the reading left out: a password that itself contains %3A, sent with only ":" escaped, reads as an escape', () => {
    // "a%3Ab:c" sent as "a%3Ab%3Ac" cannot be told from "a:b:c" sent the same way; RFC 3986 decides (an escape).
    const secrets = parseBasicAuthorization('Basic ' + b64('app:a%3Ab%3Ac')).secrets;
    expect(secrets).toContain('a:b:c');
    expect(secrets).not.toContain('a%3Ab:c');
  });

  it('where readings disagree, every reading is a candidate and the spec reading comes first', () => {
    // "YWJj" is both Base64 (of "abc") and a password as sent; "%41" reads "A" decoded or as is.
    expect(parseBasicAuthorization('Basic ' + b64('app:YWJj')).secrets).toEqual(['abc', 'YWJj']);
    expect(parseBasicAuthorization('Basic ' + b64('app:a+%41')).secrets).toEqual(['a A', 'a+%41', 'a+A']);
    expect(parseBasicAuthorization('Basic ' + b64('app:a+%3A%41')).secrets).toEqual(['a :A', 'a+:%41', 'a+:A', 'a+%3A%41']);
  });

  it('accepts the scheme in any case and extra spaces', () => {
    expect(parseBasicAuthorization('basic   ' + b64('app:') + ' ').clientId).toBe('app');
    expect(parseBasicAuthorization('BASIC ' + b64('app:')).clientId).toBe('app');
  });

  it.each([
    ['another scheme', 'Bearer ' + b64('app:x')],
    ['no credentials', 'Basic'],
    ['no credentials after the space', 'Basic '],
    ['two credentials', `Basic ${b64('app:')} ${b64('app:')}`],
    ['bad base64', 'Basic !!!!'],
    ['base64 without its padding', 'Basic ' + b64('app:x').replace(/=+$/, '')],
    ['non-canonical base64', 'Basic YXBwOng='.replace('g=', 'h=')],
    ['no colon', 'Basic ' + b64('app')],
    ['an empty id', 'Basic ' + b64(':' + b64('password'))],
    ['an id with a control character', 'Basic ' + b64('a\u0001b:')],
    ['bytes that are not UTF-8', 'Basic ' + Buffer.from([0x61, 0xff, 0x3a]).toString('base64')],
    ['an empty header', ''],
  ])('refuses %s with InvalidClientError', (_what, header) => {
    expect(() => parseBasicAuthorization(header)).toThrow(InvalidClientError);
  });

  it('never throws anything but InvalidClientError, whatever the header', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.string({ unit: 'binary' }).map((s) => 'Basic ' + b64(s))), (header) => {
        try {
          const parsed = parseBasicAuthorization(header);
          expect(parsed.clientId.length).toBeGreaterThan(0);
          for (const s of parsed.secrets) expect(s).not.toBe('');
        } catch (err) {
          expect(err).toBeInstanceOf(InvalidClientError);
        }
      }),
    );
  });
});

describe('buildSpecAuthorization', () => {
  it('builds scenario I and II exactly as spec part 5 describes', () => {
    expect(buildSpecAuthorization('app', 'pw')).toBe('Basic ' + b64('app:' + b64('pw')));
    expect(buildSpecAuthorization('app')).toBe('Basic ' + b64('app:'));
    expect(buildSpecAuthorization('app', '')).toBe('Basic ' + b64('app:'));
  });

  it('round-trips through parseBasicAuthorization', () => {
    expect(parseBasicAuthorization(buildSpecAuthorization('app', 'pässwörd:1'))).toMatchObject({ clientId: 'app', secrets: expect.arrayContaining(['pässwörd:1']) });
    expect(parseBasicAuthorization(buildSpecAuthorization('app'))).toEqual({ clientId: 'app', secrets: [] });
  });
});

describe('client ids in Basic headers', () => {
  it("'%' and '+' read differently in the two forms, which is why they cannot be registered", () => {
    // The spec form carries the id raw, RFC 6749 form-encodes it: 'a%41' and 'a+b' are ambiguous.
    expect(parseBasicAuthorization(buildSpecAuthorization('a%41', 'password-1')).clientId).not.toBe('a%41');
    expect(isRegistrableClientId('a%41')).toBe(false);
    expect(isRegistrableClientId('a+b')).toBe(false);
    expect(isRegistrableClientId('billing-app.v2_~!*()@/é')).toBe(true);
  });

  /** Client ids that can be registered; the property covers every other character. */
  const clientId = fc
    .string({ unit: 'binary', minLength: 1, maxLength: 40 })
    // eslint-disable-next-line no-control-regex
    .filter((id) => !/[:%+\u0000-\u001f\u007f]/.test(id));
  const password = fc.string({ unit: 'binary', minLength: 1, maxLength: 64 });

  it('property: the spec header and the RFC header both parse to the id and a candidate list holding the password', () => {
    fc.assert(
      fc.property(clientId, password, fc.boolean(), (id, pw, plusForSpace) => {
        const spec = parseBasicAuthorization(buildSpecAuthorization(id, pw));
        expect(spec.clientId).toBe(id);
        expect(spec.secrets).toContain(pw);
        const rfc = parseBasicAuthorization(rfcAuthorization(id, pw, plusForSpace));
        expect(rfc.clientId).toBe(id);
        expect(rfc.secrets).toContain(pw);
      }),
      { numRuns: 500 },
    );
  });

  it('property: a public client\'s spec header parses to the id and no password', () => {
    fc.assert(
      fc.property(clientId, (id) => {
        expect(parseBasicAuthorization(buildSpecAuthorization(id))).toEqual({ clientId: id, secrets: [] });
      }),
    );
  });
});

describe('formCredentials (spec part 5, revocation and introspection)', () => {
  it('takes the password as is; an absent or empty one means a public client', () => {
    expect(formCredentials('app', 'c2VjcmV0')).toEqual({ clientId: 'app', secrets: ['c2VjcmV0'] });
    expect(formCredentials('app', undefined)).toEqual({ clientId: 'app', secrets: [] });
    expect(formCredentials('app', '')).toEqual({ clientId: 'app', secrets: [] });
  });

  it('a missing client_id is InvalidRequestError naming the parameter', () => {
    expect(() => formCredentials(undefined, 'x')).toThrow(InvalidRequestError);
    expect(() => formCredentials('', 'x')).toThrow(/client_id/);
  });
});
