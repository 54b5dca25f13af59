import type { TokenResponse, TokenView } from './results.js';
import { fields, orNone, table } from './layout.js';
import { color, paintState, typeLabel } from './style.js';
import { formatDate, formatInstant, formatRelative } from './time.js';

/**
 * The spec 2.1 token response (`token issue`, `refresh`): the field names as the spec writes
 * them, the two tokens in bold, times also as dates.
 */
export function renderTokenResponse(r: TokenResponse, now: number): string {
  return fields([
    ['access_token', color.bold(r.access_token)],
    ['refresh_token', color.bold(r.refresh_token)],
    ['token_type', r.token_type],
    ['expires_in', `${r.expires_in} ${color.dim(`(${formatInstant(r.stime + r.expires_in * 1000, now)})`)}`],
    ['scope', orNone(r.scope)],
    ['jti', r.jti],
    ['node', r.node],
    ['org_id', orNone(r.org_id)],
    ['stime', `${r.stime} ${color.dim(`(${formatDate(r.stime)})`)}`],
  ]);
}

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
