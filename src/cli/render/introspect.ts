import type { Inspection } from '../../engine/results.js';
import type { IntrospectionResult, TokenView } from './results.js';
import { fields, orNone } from './layout.js';
import { color, paintState } from './style.js';
import { formatDate, formatInstant, formatRelative } from './time.js';

/** The verdict line, first and in colour: `ACTIVE`, `EXPIRED 3 min ago`, `REVOKED at …`. */
export function renderVerdict(inspection: Inspection, now: number, store = 'this store'): string {
  if (inspection.verdict === 'unknown') {
    return `${color.bold.magenta('UNKNOWN')} ${color.dim(`no such token in ${store} (never issued here, or purged)`)}`;
  }
  const t = inspection.token;
  switch (inspection.verdict) {
    case 'active':
      return `${paintState('active', color.bold('ACTIVE'))} ${color.dim(`expires ${formatRelative(t.expires_at, now)}`)}`;
    case 'expired':
      return `${paintState('expired', color.bold('EXPIRED'))} ${formatRelative(t.expires_at, now)}`;
    case 'not_yet_valid':
      return `${paintState('not_yet_valid', color.bold('NOT YET VALID'))} until ${formatInstant(t.not_before, now)}`;
    case 'revoked':
      if (t.revoked_at !== null) return `${paintState('revoked', color.bold('REVOKED'))} at ${formatInstant(t.revoked_at, now)}`;
      return `${paintState('revoked', color.bold('REVOKED'))} replaced by a newer refresh token at ${formatInstant(t.replaced_at ?? 0, now)}`;
  }
}

function viewFields(t: TokenView, iss: string | undefined, now: number): [string, string | undefined][] {
  return [
    ['jti', t.jti],
    ['token_type', t.type],
    ['client_id', t.client_id],
    ['username', t.username],
    ['sub', t.sub],
    ['scope', orNone(t.scope)],
    ['aud', orNone(t.aud)],
    ['iss', iss],
    ['node', t.node],
    ['grant', color.dim(t.grant_id)],
    // RFC 9449 §6: introspection's cnf.jkt, the key a bound token must be presented with.
    ['cnf.jkt', t.jkt === null ? undefined : `${t.jkt} (DPoP-bound: usable only with proofs by that key)`],
    ['issued', formatInstant(t.issued_at, now)],
    ['not before', t.not_before === t.issued_at ? undefined : formatInstant(t.not_before, now)],
    ['expires', formatInstant(t.expires_at, now)],
    ['revoked', t.revoked_at === null ? undefined : formatInstant(t.revoked_at, now)],
    ['replaced', t.replaced_at === null ? undefined : formatInstant(t.replaced_at, now)],
  ];
}

/** Local `introspect`: the verdict first, then what the store knows (never the token). */
export function renderInspection(inspection: Inspection, now: number, store?: string): string {
  const head = renderVerdict(inspection, now, store);
  if (inspection.verdict === 'unknown') return head;
  const iss = inspection.introspection.active ? inspection.introspection.iss : undefined;
  return `${head}\n\n${fields(viewFields(inspection.token, iss, now))}`;
}

/** `introspect --url`: the server's 2.3 record, which for an inactive token says only that. */
export function renderIntrospection(r: IntrospectionResult, now: number): string {
  if (!r.active) return `${color.bold.red('INACTIVE')} ${color.dim('the server says only active=false (expired, revoked, unknown or not yet valid)')}`;
  const s = (seconds: number): string => formatInstant(seconds * 1000, now);
  return [
    `${paintState('active', color.bold('ACTIVE'))} ${color.dim(`expires ${formatRelative(r.exp * 1000, now)}`)}`,
    '',
    fields([
      ['jti', r.jti],
      ['token_type', r.token_type],
      ['client_id', r.client_id],
      ['username', r.username],
      ['sub', r.sub],
      ['scope', orNone(r.scope)],
      ['aud', orNone(r.aud)],
      ['iss', r.iss],
      ['iat', `${r.iat} ${color.dim(`(${formatDate(r.iat * 1000)})`)}`],
      ['nbf', r.nbf === r.iat ? undefined : s(r.nbf)],
      ['exp', `${r.exp} ${color.dim(`(${s(r.exp)})`)}`],
      ['cnf.jkt', boundKey(r)],
    ]),
  ].join('\n');
}

/** RFC 9449 §6.2: the thumbprint of the key a DPoP-bound token is bound to, as the server sent it. */
function boundKey(r: IntrospectionResult & { active: true }): string | undefined {
  const jkt = r.cnf?.jkt;
  return typeof jkt === 'string' ? `${jkt} ${color.dim('(DPoP-bound: usable only with proofs by that key)')}` : undefined;
}
