import type { TokenResponse, TokenView } from './results.js';
import { fields, orNone, table } from './layout.js';
import { color, paintState, typeLabel } from './style.js';
import { formatDate, formatInstant, formatRelative } from './time.js';

/**
 * The spec 2.1 token response (`token issue`, `refresh`, `login`): the field names as the spec
 * writes them, the two tokens in bold, times also as dates. A field another server left out
 * (`login` talks to any RFC 6749 server, §5.1 requires only two) is left out, not shown empty.
 */
export function renderTokenResponse(r: TokenResponse | LooseTokenResponse, now: number): string {
  const t: LooseTokenResponse = r;
  const issued = t.stime ?? now;
  return fields([
    ['access_token', color.bold(t.access_token)],
    ['refresh_token', t.refresh_token === undefined ? undefined : color.bold(t.refresh_token)],
    ['token_type', t.token_type],
    ['expires_in', t.expires_in === undefined ? undefined : `${t.expires_in} ${color.dim(`(${formatInstant(issued + t.expires_in * 1000, now)})`)}`],
    ['scope', t.scope === undefined ? undefined : orNone(t.scope)],
    ['jti', t.jti],
    ['node', t.node],
    ['org_id', t.org_id === undefined ? undefined : orNone(t.org_id)],
    ['stime', t.stime === undefined ? undefined : `${t.stime} ${color.dim(`(${formatDate(t.stime)})`)}`],
  ]);
}

/** A token response with only RFC 6749 §5.1's two required fields sure to be there. */
export type LooseTokenResponse = Pick<TokenResponse, 'access_token'> & { token_type: string } & Partial<Omit<TokenResponse, 'access_token' | 'token_type'>>;

/** Goes to stderr under a token response. */
export function tokenNotice(): string {
  return color.dim('Tokens are shown only when issued: tokenctl keeps only their digests.');
}

/** `token list`: never the token, only what identifies it. */
export function renderTokenList(tokens: TokenView[], now: number): string {
  if (tokens.length === 0) return color.dim('No tokens match.');
  const rows = tokens.map((t) => [
    t.jti,
    typeLabel(t.type),
    t.client_id,
    t.username,
    paintState(t.state),
    `${formatDate(t.expires_at)} ${color.dim(`(${formatRelative(t.expires_at, now)})`)}`,
  ]);
  return table(['JTI', 'TYPE', 'CLIENT', 'USER', 'STATE', 'EXPIRES'], rows);
}
