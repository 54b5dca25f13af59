import type { ClientCreateResult, ClientDeleteResult, ClientRotateSecretResult, ClientShowResult, ClientView, TokenCounts } from './results.js';
import { fields, orNone, plural, storeNote, table } from './layout.js';
import { color, paintState } from './style.js';
import { formatInstant, formatTtl } from './time.js';

function ttl(seconds: number | null): string {
  return seconds === null ? color.dim('default') : formatTtl(seconds);
}

/** A client's scope: empty means no restriction, so any scope is granted it (engine/issue.ts narrowScope). */
function clientScope(scope: string): string {
  return scope === '' ? color.dim('(any: no restriction)') : scope;
}

function clientFields(c: ClientView, now: number): [string, string | undefined][] {
  return [
    ['client_id', color.bold(c.client_id)],
    ['name', c.name],
    ['type', c.type],
    ['scope', clientScope(c.scope)],
    ['org_id', orNone(c.org_id)],
    ['audience', orNone(c.audience)],
    ['access ttl', ttl(c.access_ttl_s)],
    ['refresh ttl', ttl(c.refresh_ttl_s)],
    ['grant types', c.grant_types.join(', ')],
    ['redirect URIs', c.redirect_uris.length === 0 ? undefined : c.redirect_uris.join(' ')],
    ['login provider', c.login_provider ? 'yes: may answer login requests' : undefined],
    ['requires DPoP', c.require_dpop ? 'yes: token requests without a DPoP proof are refused' : undefined],
    ['created', formatInstant(c.created_at, now)],
  ];
}

/** `client update`: the client as it is now. */
export function renderClientUpdated(c: ClientView, now: number): string {
  return [color.green(`Updated client ${color.bold(c.client_id)}`), '', fields(clientFields(c, now))].join('\n');
}

/** `client create`: the id, and the secret with the warning that it is shown only now. */
export function renderClientCreated(r: ClientCreateResult, now: number): string {
  const lines = [color.green(`Created ${r.type} client ${color.bold(r.client_id)}`), '', fields(clientFields(r, now))];
  if (r.client_secret !== null) lines.push('', fields([['client_secret', color.bold(r.client_secret)]]));
  return lines.join('\n');
}

/** Goes to stderr, below the secret: the one thing an operator must not miss. */
export function secretNotice(): string {
  return color.yellow('This secret is shown once and cannot be shown again: store it now. (Lost it? tokenctl client rotate-secret)');
}

export function renderSecretRotated(r: ClientRotateSecretResult, now: number): string {
  return [
    color.green(`New secret for client ${color.bold(r.client_id)}`) + color.dim(' (the old one no longer works)'),
    '',
    fields([
      ['client_id', r.client_id],
      ['client_secret', color.bold(r.client_secret)],
      ['changed', formatInstant(r.secret_updated_at, now)],
      ['store', r.store],
    ]),
  ].join('\n');
}

export function renderClientList(clients: ClientView[], now: number): string {
  if (clients.length === 0) return color.dim('No clients. Register one with: tokenctl client create --name NAME');
  const rows = clients.map((c) => [c.client_id, c.name, c.type, c.scope === '' ? color.dim('(any)') : c.scope, formatInstant(c.created_at, now)]);
  return table(['CLIENT ID', 'NAME', 'TYPE', 'SCOPE', 'CREATED'], rows);
}

export function renderTokenCounts(t: TokenCounts): string {
  if (t.total === 0) return color.dim('none');
  return [
    plural(t.total, 'token'),
    color.dim('—'),
    paintState('active', `${t.active} active`) + ',',
    paintState('expired', `${t.expired} expired`) + ',',
    paintState('revoked', `${t.revoked} revoked`),
  ].join(' ');
}

export function renderClientShow(c: ClientShowResult, now: number): string {
  return fields([
    ...clientFields(c, now),
    ['secret changed', c.type === 'public' ? undefined : formatInstant(c.secret_updated_at, now)],
    ['tokens', renderTokenCounts(c.tokens)],
  ]);
}

/** What `client delete` will remove, for the confirmation and for --dry-run. */
export function renderClientDeletePlan(client: ClientView, tokens: number): string {
  return `Client ${color.bold(client.client_id)} (${client.name}) and ${color.bold(plural(tokens, 'token'))} issued to it will be deleted.`;
}

export function renderClientDeleted(r: ClientDeleteResult): string {
  if (r.dry_run) return `${renderClientDeletePlan(r.client, r.tokens)}\n${color.dim('Dry run: nothing was deleted.')}\n${storeNote(r.store)}`;
  return color.green(`Deleted client ${color.bold(r.client.client_id)} and ${plural(r.tokens, 'token')}.`) + `\n${storeNote(r.store)}`;
}

