import { isUtf8 } from 'node:buffer';
import type { FastifyRequest } from 'fastify';
import { InvalidRequestError, UnsupportedTokenTypeError } from '../engine/errors.js';
import { optional } from '../engine/parameters.js';
import type { TokenType } from '../store/store.js';
import { UnsupportedMediaTypeError } from './transport-errors.js';

/** The parameters of an `application/x-www-form-urlencoded` body: each name at most once. */
export type Form = Record<string, string | undefined>;

/** The one media type the three endpoints take (spec part 4). */
export const FORM_MEDIA_TYPE = 'application/x-www-form-urlencoded';

/** Contract 3: a body of more than 16 KiB is refused with 413. */
export const BODY_LIMIT = 16 * 1024;

const CHARSET = /;\s*charset\s*=\s*"?([^";\s]+)"?/i;

/**
 * The content-type parser of the three endpoints: checks the charset parameter (only UTF-8
 * makes sense for a form of ASCII and percent-encoded UTF-8), refuses bytes that are not UTF-8,
 * and parses strictly (see {@link parseForm}).
 */
export function formBodyParser(contentType: string | undefined, body: Buffer): Form {
  const charset = contentType === undefined || contentType === FORM_MEDIA_TYPE ? undefined : CHARSET.exec(contentType)?.[1];
  if (charset !== undefined && !/^utf-?8$/i.test(charset)) {
    throw new UnsupportedMediaTypeError(`charset=${charset} is not supported: send UTF-8`);
  }
  if (!isUtf8(body)) throw new InvalidRequestError('The request body is not valid UTF-8');
  return parseForm(body.toString('utf8'));
}

/**
 * Strict `application/x-www-form-urlencoded` parsing (RFC 6749 appendix B, WHATWG URL §5):
 * - a parameter given twice is refused (RFC 6749 §3.1: "MUST NOT be included more than once");
 * - invalid percent-encoding, or percent-encoding that is not UTF-8, is refused;
 * - NUL characters are refused anywhere;
 * - a parameter without a value is kept as "", which `engine/parameters.ts` treats as omitted
 *   (RFC 6749 §3.1).
 */
export function parseForm(text: string): Form {
  const form: Form = Object.create(null) as Form;
  if (text === '') return form;
  let start = 0;
  while (start <= text.length) {
    let end = text.indexOf('&', start);
    if (end === -1) end = text.length;
    if (end > start) {
      const eq = text.indexOf('=', start);
      const split = eq === -1 || eq > end ? end : eq;
      const name = decode(text.slice(start, split), null);
      const value = split === end ? '' : decode(text.slice(split + 1, end), name);
      if (form[name] !== undefined) throw new InvalidRequestError(`The parameter ${shown(name)} is given more than once`, name);
      form[name] = value;
    }
    start = end + 1;
  }
  return form;
}

/** Decodes one name (`parameter` null) or the value of `parameter`. */
function decode(raw: string, parameter: string | null): string {
  let value = raw;
  if (value.includes('+')) value = value.replace(/\+/g, ' ');
  const what = parameter === null ? 'A parameter name' : `The parameter ${shown(parameter)}`;
  if (value.includes('%')) {
    try {
      value = decodeURIComponent(value);
    } catch {
      throw new InvalidRequestError(`${what} is not valid percent-encoded UTF-8`, parameter ?? undefined);
    }
  }
  if (value.includes('\u0000')) throw new InvalidRequestError(`${what} contains a NUL character`, parameter ?? undefined);
  return value;
}

/** A client's parameter name as echoed in a message: short, and printable. */
function shown(name: string): string {
  // eslint-disable-next-line no-control-regex
  const printable = name.replace(/[\u0000-\u001f\u007f]/g, '?');
  return printable.length > 40 ? printable.slice(0, 40) + '…' : printable;
}

/**
 * The parsed form of a request. A POST without a body reaches the handler with no body at all:
 * without a Content-Type that is 415 (spec 4: the header is required), with one it is an empty form.
 */
export function formOf(request: FastifyRequest): Form {
  const body = request.body as Form | undefined;
  if (body !== undefined && body !== null) return body;
  const type = request.headers['content-type'];
  if (type === undefined || type.split(';')[0]!.trim().toLowerCase() !== FORM_MEDIA_TYPE) {
    throw new UnsupportedMediaTypeError();
  }
  return Object.create(null) as Form;
}

/**
 * Spec 4.2/4.3 `token_type_hint`, optional at the server (contract 3; RFC 7009
 * §2.1, RFC 7662 §2.1): most client libraries and resource servers omit it, and the token is
 * found whatever its type anyway. Missing or empty: undefined. A value other than the two token
 * types is RFC 7009 §2.2.1 `unsupported_token_type` (contract 3: 400).
 */
export function tokenTypeHint(form: Form): TokenType | undefined {
  const hint = optional(form, 'token_type_hint');
  if (hint === undefined) return undefined;
  if (hint !== 'access_token' && hint !== 'refresh_token') throw new UnsupportedTokenTypeError(hint);
  return hint;
}
