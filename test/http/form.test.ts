import { describe, expect, it } from 'vitest';
import { InvalidRequestError, UnsupportedTokenTypeError } from '../../src/engine/errors.js';
import { optional, required } from '../../src/engine/parameters.js';
import { parseForm, tokenTypeHint } from '../../src/http/form.js';

/** Strict application/x-www-form-urlencoded parsing (contract 3, RFC 6749 §3.1). */
describe('parseForm', () => {
  it('decodes names and values, + and %20 as spaces, %2B as +', () => {
    expect({ ...parseForm('a=1&b=x+y&c=x%20y&d=%2B%3D%26&e=caf%C3%A9') }).toEqual({ a: '1', b: 'x y', c: 'x y', d: '+=&', e: 'café' });
  });

  it('a name without = has the empty value; empty pairs are skipped', () => {
    expect({ ...parseForm('&&a&b=&c=1&') }).toEqual({ a: '', b: '', c: '1' });
    expect({ ...parseForm('') }).toEqual({});
  });

  it('only the first = splits', () => {
    expect(parseForm('a=b=c').a).toBe('b=c');
  });

  it.each([
    ['the same name twice', 'a=1&a=1'],
    ['the same name, differently encoded', 'token=1&%74oken=2'],
    ['an empty value and a value', 'a=&a=1'],
  ])('refuses %s', (_name, body) => {
    expect(() => parseForm(body)).toThrow(InvalidRequestError);
    expect(() => parseForm(body)).toThrow(/more than once/);
  });

  it.each(['a=%', 'a=%4', 'a=%zz', 'a=%C3', 'a=%ED%A0%80', '%FF=1'])('refuses the bad encoding in %s', (body) => {
    expect(() => parseForm(body)).toThrow(/percent-encoded UTF-8/);
  });

  it('refuses NUL in names and values', () => {
    expect(() => parseForm('a=x%00')).toThrow(/NUL/);
    expect(() => parseForm('a%00=x')).toThrow(/NUL/);
  });

  it('is not fooled by __proto__ or constructor', () => {
    const form = parseForm('__proto__=x&constructor=y&toString=z');
    expect(form.__proto__).toBe('x');
    expect(form.constructor).toBe('y');
    expect(Object.getPrototypeOf(form)).toBeNull();
  });

  it('echoes a long or unprintable parameter name only in part', () => {
    const long = 'n'.repeat(500);
    try {
      parseForm(`${long}=1&${long}=2`);
    } catch (err) {
      expect((err as Error).message.length).toBeLessThan(100);
    }
  });
});

describe('required, optional, tokenTypeHint', () => {
  it('empty counts as missing (RFC 6749 §3.1)', () => {
    const form = parseForm('a=&b=1');
    expect(() => required(form, 'a')).toThrow(/The parameter a is missing/);
    expect(() => required(form, 'z')).toThrow(/The parameter z is missing/);
    expect(required(form, 'b')).toBe('1');
    expect(optional(form, 'a')).toBeUndefined();
    expect(optional(form, 'b')).toBe('1');
  });

  it('token_type_hint: optional (contract 3, revised 2026-11), else one of the two types', () => {
    expect(tokenTypeHint(parseForm('token_type_hint=refresh_token'))).toBe('refresh_token');
    expect(tokenTypeHint(parseForm(''))).toBeUndefined();
    expect(tokenTypeHint(parseForm('token_type_hint='))).toBeUndefined();
    expect(() => tokenTypeHint(parseForm('token_type_hint=Access_Token'))).toThrow(UnsupportedTokenTypeError);
  });
});
