import { stripVTControlCharacters as plain } from 'node:util';
import { describe, expect, it } from 'vitest';
import { formatDate, formatElapsed, formatInstant, formatRelative, formatSpan, formatTtl } from '../../src/cli/render/time.js';
import { progressLine } from '../../src/cli/render/purge.js';
import { fields, plural, table } from '../../src/cli/render/layout.js';
import { renderInspection, renderVerdict } from '../../src/cli/render/introspect.js';
import { renderTokenList, renderTokenResponse } from '../../src/cli/render/token.js';
import type { TokenView } from '../../src/engine/results.js';
import { redactTokens } from '../../src/cli/errors.js';

const NOW = Date.UTC(2025, 2, 1, 12, 0, 0);
const MIN = 60_000;

describe('time rendering', () => {
  it('writes dates in UTC to the second', () => {
    expect(formatDate(NOW)).toBe('2025-03-01 12:00:00 UTC');
    expect(formatDate(NOW + 1234)).toBe('2025-03-01 12:00:01 UTC');
  });

  it.each([
    [NOW + 42 * MIN, 'in 42 min'],
    [NOW - 3 * MIN, '3 min ago'],
    [NOW - 3 * 86_400_000, '3 d ago'],
    [NOW + 30 * 86_400_000, 'in 30 d'],
    [NOW + 5 * 3_600_000, 'in 5 h'],
    [NOW + 90 * MIN, 'in 90 min'],
    [NOW - 45_000, '45 s ago'],
    [NOW + 400, 'now'],
  ])('relative time of %i is %s', (at, text) => {
    expect(formatRelative(at, NOW)).toBe(text);
  });

  it('joins the date and the relative time', () => {
    expect(formatInstant(NOW + 42 * MIN, NOW)).toBe('2025-03-01 12:42:00 UTC (in 42 min)');
  });

  it('rounds spans down and picks a readable unit', () => {
    expect(formatSpan(59_999)).toBe('59 s');
    expect(formatSpan(2 * 3_600_000 - 1)).toBe('119 min');
    expect(formatSpan(47 * 3_600_000)).toBe('47 h');
    expect(formatSpan(-2 * 86_400_000)).toBe('2 d');
  });

  it('writes elapsed times and lifetimes the way flags take them', () => {
    expect(formatElapsed(35)).toBe('35 ms');
    expect(formatElapsed(1234)).toBe('1.2 s');
    expect(formatTtl(3600)).toBe('1h');
    expect(formatTtl(30 * 86_400)).toBe('30d');
    expect(formatTtl(900)).toBe('15m');
    expect(formatTtl(90)).toBe('90s');
  });
});

describe('layout', () => {
  it('aligns table columns on visible width, ignoring colour codes', () => {
    const out = plain(table(['A', 'B'], [['\u001b[32mxx\u001b[39m', '1'], ['yyyy', '2']]));
    expect(out.split('\n')).toEqual(['A     B', 'xx    1', 'yyyy  2']);
  });

  it('leaves out fields without a value and aligns labels', () => {
    expect(plain(fields([['a', '1'], ['long', undefined], ['bb', '2']]))).toBe('a:  1\nbb: 2');
  });

  it('pluralises', () => {
    expect(plural(1, 'token')).toBe('1 token');
    expect(plural(0, 'token')).toBe('0 tokens');
  });

  it('draws a bounded progress bar', () => {
    expect(progressLine(0, 10, 10)).toBe('[----------]   0%  0/10 deleted');
    expect(progressLine(5, 10, 10)).toBe('[#####-----]  50%  5/10 deleted');
    expect(progressLine(15, 10, 10)).toBe('[##########] 100%  15/10 deleted');
    expect(progressLine(0, 0, 4)).toBe('[####] 100%  0/0 deleted');
  });
});

const view = (over: Partial<TokenView>): TokenView => ({
  jti: '11111111-1111-4111-8111-111111111111',
  type: 'access_token',
  state: 'active',
  client_id: 'web',
  username: 'alice',
  sub: 'alice',
  scope: 'read',
  aud: '',
  node: 'n1',
  grant_id: 'g',
  issued_at: NOW - 10 * MIN,
  not_before: NOW - 10 * MIN,
  expires_at: NOW + 50 * MIN,
  revoked_at: null,
  replaced_at: null,
  jkt: null,
  ...over,
});

describe('token and verdict rendering', () => {
  it('puts the verdict first, with the reason in time', () => {
    const introspection = { active: false } as const;
    expect(plain(renderVerdict({ verdict: 'active', token: view({}), introspection }, NOW))).toBe('ACTIVE expires in 50 min');
    expect(plain(renderVerdict({ verdict: 'expired', token: view({ expires_at: NOW - 3 * MIN }), introspection }, NOW))).toBe('EXPIRED 3 min ago');
    expect(plain(renderVerdict({ verdict: 'revoked', token: view({ revoked_at: NOW - MIN }), introspection }, NOW))).toBe(
      'REVOKED at 2025-03-01 11:59:00 UTC (1 min ago)',
    );
    expect(plain(renderVerdict({ verdict: 'not_yet_valid', token: view({ not_before: NOW + MIN }), introspection }, NOW))).toMatch(/^NOT YET VALID until/);
    expect(plain(renderVerdict({ verdict: 'unknown' }, NOW))).toMatch(/^UNKNOWN/);
  });

  it('a DPoP-bound token shows its cnf.jkt; a bearer token none', () => {
    const active = { active: true, scope: 'read', client_id: 'web', username: 'alice', token_type: 'access_token', exp: 1, iat: 1, nbf: 1, sub: 'alice', aud: 'api', iss: 'https://i', jti: 'j', cnf: { jkt: 'jkt-of-the-key' } } as const;
    expect(plain(renderInspection({ verdict: 'active', token: view({ jkt: 'jkt-of-the-key' }), introspection: active }, NOW))).toMatch(/cnf\.jkt:\s+jkt-of-the-key \(DPoP-bound/);
    expect(plain(renderInspection({ verdict: 'active', token: view({}), introspection: active }, NOW))).not.toMatch(/cnf\.jkt/);
  });

  it('lists tokens by jti, type, client, user, state and expiry', () => {
    const out = plain(renderTokenList([view({}), view({ type: 'refresh_token', state: 'revoked', revoked_at: NOW - 2 * MIN })], NOW));
    const [head, first, second] = out.split('\n');
    expect(head).toMatch(/^JTI\s+TYPE\s+CLIENT\s+USER\s+STATE\s+EXPIRES$/);
    expect(first).toMatch(/access\s+web\s+alice\s+active\s+2025-03-01 12:50:00 UTC \(in 50 min\)$/);
    expect(second).toMatch(/refresh\s+web\s+alice\s+revoked\s+2025-03-01 12:50:00 UTC \(in 50 min\)$/);
  });

});

describe('token response', () => {
  it('shows all nine fields of a spec 2.1 response', () => {
    const text = plain(renderTokenResponse({ access_token: 'tca_a', refresh_token: 'tcr_r', token_type: 'bearer', expires_in: 3600, scope: '', jti: 'j-1', node: 'n1', org_id: 'o', stime: NOW }, NOW));
    expect(text.split('\n').map((l) => l.split(':')[0])).toEqual(['access_token', 'refresh_token', 'token_type', 'expires_in', 'scope', 'jti', 'node', 'org_id', 'stime']);
    expect(text).toMatch(/^scope: +\(none\)$/m);
  });

  it('leaves out what another server did not send (login), timing expiry from now', () => {
    const text = plain(renderTokenResponse({ access_token: 'eyJ.x.y', token_type: 'Bearer', expires_in: 600 }, NOW));
    expect(text).toBe(['access_token: eyJ.x.y', 'token_type:   Bearer', `expires_in:   600 (${formatInstant(NOW + 600_000, NOW)})`].join('\n'));
  });
});

describe('error text', () => {
  it('cuts tokens in error messages to a recognisable stub', () => {
    const token = 'tcr_' + 'abcdefghij'.repeat(4) + 'k-_';
    expect(redactTokens(`The refresh token is invalid because it has expired: ${token}`)).toBe(
      'The refresh token is invalid because it has expired: tcr_abcdef…',
    );
    expect(redactTokens('tca_short stays')).toBe('tca_short stays');
    // An authorization code (contract 5) that another server's error echoes.
    expect(redactTokens(`invalid_grant: code tcc_${'Z9'.repeat(21)}x is unknown`)).toBe('invalid_grant: code tcc_Z9Z9Z9… is unknown');
  });
});

describe('bulk revocation text', () => {
  it('names the selection and the count', async () => {
    const { bulkQuestion, describeSelection, renderBulkRevocation } = await import('../../src/cli/render/revoke.js');
    expect(describeSelection({ user: 'alice', client: 'web' })).toBe('user alice of client web');
    expect(describeSelection({ client: 'web' })).toBe('client web');
    expect(bulkQuestion('user alice', 1)).toBe('Revoke 1 active token (user alice)?');
    const done = { selector: 'client web', store: 'postgres://tokenctl@db/auth', matched: 3, revoked: 3, elapsed_ms: 1500, dry_run: false };
    expect(plain(renderBulkRevocation(done))).toBe('Revoked 3 tokens (client web) in 1.5 s.\nStore: postgres://tokenctl@db/auth');
    expect(plain(renderBulkRevocation({ ...done, dry_run: true, revoked: 0 }))).toMatch(/^3 active tokens \(client web\) would be revoked\. Dry run/);
  });
});

describe('status text: security events', () => {
  const at = Date.UTC(2025, 2, 1, 12, 0, 0);
  type Events = { receivers: number; pending: number; dead: number; oldest_pending_at: number | null; behind?: string[] };
  const report = (events: Events) => ({
    store: '/tmp/t.db',
    schema_version: 5,
    clients: 1,
    tokens: { access_token: { active: 0, expired: 0, revoked: 0 }, refresh_token: { active: 0, expired: 0, revoked: 0 } },
    oldest_expired_at: null,
    events: { lag_warning_ms: 60_000, behind: [], ...events },
  });
  const line = async (events: Events, now: number) => {
    const { renderStatus } = await import('../../src/cli/render/status.js');
    return plain(renderStatus(report(events), now)).split('\n').find((l) => l.startsWith('security events:'));
  };

  it('says what waits, and names the receivers behind (past the lag warning, or with dead letters) with a pointer to receiver list', async () => {
    expect(await line({ receivers: 0, pending: 0, dead: 0, oldest_pending_at: null }, at)).toMatch(/:\s+no receiver \(none are written\)$/);
    expect(await line({ receivers: 1, pending: 0, dead: 0, oldest_pending_at: null }, at)).toMatch(/:\s+1 receiver, nothing pending$/);
    expect(await line({ receivers: 2, pending: 1234, dead: 0, oldest_pending_at: at - 10_000 }, at)).toMatch(
      /:\s+2 receivers, 1,234 pending since 2025-03-01 11:59:50 UTC \(10 s ago\)$/,
    );
    expect(await line({ receivers: 2, pending: 3, dead: 0, oldest_pending_at: at - 2 * 60_000, behind: ['rs-1'] }, at)).toMatch(/pending since .* \(2 min ago\); behind: rs-1 — tokenctl receiver list shows why$/);
    expect(await line({ receivers: 1, pending: 0, dead: 1, oldest_pending_at: null, behind: ['gw'] }, at)).toMatch(/:\s+1 receiver, nothing pending, 1 dead letter; behind: gw — tokenctl receiver list shows why$/);
  });
});
