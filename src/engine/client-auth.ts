import { InvalidClientError, InvalidRequestError } from './errors.js';

/**
 * What a request presented to prove which client it is (spec part 5, contract 3).
 * `secrets` lists the candidate passwords the presentation can mean, in order; empty when
 * no password was presented (a public client).
 */
export interface PresentedCredentials {
  clientId: string;
  secrets: string[];
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Strict Base64 decoding to UTF-8: null if the input is not canonical Base64 of valid UTF-8. */
export function decodeBase64Strict(value: string): string | null {
  if (value.length % 4 !== 0 || !BASE64.test(value)) return null;
  const bytes = Buffer.from(value, 'base64');
  if (bytes.toString('base64') !== value) return null;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return null;
  }
}

/** application/x-www-form-urlencoded decoding of one component (RFC 6749 appendix B). */
function formDecode(value: string): string | null {
  try {
    return decodeURIComponent(value.replace(/\+/g, ' '));
  } catch {
    return null;
  }
}

/**
 * Percent-decoding alone (RFC 3986 §2.1), `+` kept as `+`, and a `%` that does not start valid
 * percent-encoded UTF-8 kept as it is: what clients send that escape only the characters they
 * must (a `:` in the password as `%3A`) and leave `+` and `%` alone.
 */
function percentDecodeLenient(value: string): string {
  return value.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) => {
    try {
      return decodeURIComponent(run);
    } catch {
      return run;
    }
  });
}

/**
 * Parses an `Authorization: Basic …` header into the credentials it can mean:
 * - spec part 5 scenario I: `base64(client_id ":" base64(password))`;
 * - spec part 5 scenario II: `base64(client_id ":")`, a public client;
 * - RFC 6749 §2.3.1: `base64(urlencode(client_id) ":" urlencode(password))`;
 * - encodings seen in the field: only `:` escaped as `%3A` and nothing else (the "interop" Basic
 *   of @badgateway/oauth2-client and others); every `%XX` decoded but `+` kept; and the password
 *   as sent (RFC 7617, no encoding at all; a `:` in it is kept, since the id ends at the first).
 * The id reads the same in every encoding: registrable ids contain no `:`, `%`, `+` or space
 * ({@link isRegistrableClientId}). Where the readings of the password disagree, each is a
 * candidate, tried in that order against the client's one registered password: at most one can
 * equal it, so no reading can authenticate as anything but the client the id names, and the
 * order only decides how soon a right password is found (the spec's reading first). The one
 * password these cannot recover is one that itself contains `%3A` (or `%` and two hex digits)
 * sent with only `:` escaped: that text is the same as an escaped `:`; the escape wins (RFC 3986),
 * and such a client is told to use the spec's header, RFC 6749's encoding or client_secret_post.
 * Throws {@link InvalidClientError} for a header that is not a Basic credential at all.
 */
export function parseBasicAuthorization(header: string): PresentedCredentials {
  const match = /^Basic[ ]+([^ ]+)[ ]*$/i.exec(header);
  const decoded = match?.[1] ? decodeBase64Strict(match[1]) : null;
  const colon = decoded?.indexOf(':') ?? -1;
  if (decoded == null || colon <= 0) throw new InvalidClientError('(malformed Authorization header)', 'malformed_header');
  const rawId = decoded.slice(0, colon);
  const rawSecret = decoded.slice(colon + 1);
  const clientId = formDecode(rawId) ?? rawId;
  if (!isPlausibleClientId(clientId)) throw new InvalidClientError('(malformed Authorization header)', 'malformed_header');
  if (rawSecret === '') return { clientId, secrets: [] };
  const candidates = [decodeBase64Strict(rawSecret), formDecode(rawSecret), rawSecret.replace(/%3A/gi, ':'), percentDecodeLenient(rawSecret), rawSecret];
  return { clientId, secrets: unique(candidates) };
}

/** Credentials sent as form parameters (spec part 5, revocation and introspection). */
export function formCredentials(clientId: string | undefined, clientSecret: string | undefined): PresentedCredentials {
  if (clientId === undefined || clientId === '') {
    throw new InvalidRequestError('The parameter client_id is missing', 'client_id');
  }
  return { clientId, secrets: clientSecret === undefined || clientSecret === '' ? [] : [clientSecret] };
}

/** Builds the spec's scenario I / II header value (the CLI's `--url` client uses it). */
export function buildSpecAuthorization(clientId: string, password?: string): string {
  const inner = password ? `${clientId}:${Buffer.from(password, 'utf8').toString('base64')}` : `${clientId}:`;
  return 'Basic ' + Buffer.from(inner, 'utf8').toString('base64');
}

/** Client ids are printable, without control characters, at most 200 characters. */
export function isPlausibleClientId(id: string): boolean {
  // eslint-disable-next-line no-control-regex
  return id.length > 0 && id.length <= 200 && !/[\u0000-\u001f\u007f]/.test(id);
}

/**
 * Client ids that may be registered: plausible, and without whitespace, `:`, `%` or `+`. A colon
 * would end the id inside a Basic credential; `%` and `+` would make the spec's header (raw id)
 * and RFC 6749 §2.3.1's (form-urlencoded id) decode to different ids, so that one of the two
 * could never authenticate. Every other character reads the same in both.
 */
export function isRegistrableClientId(id: string): boolean {
  return isPlausibleClientId(id) && !/[\s:%+]/.test(id);
}

function unique(values: (string | null)[]): string[] {
  return [...new Set(values.filter((v): v is string => v !== null && v !== ''))];
}
