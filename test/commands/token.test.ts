import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, issue, issueInThePast, tempStore, type IssuedTokens, type TempStore } from '../helpers/cli.js';

const TOKEN_RESPONSE_KEYS = ['access_token', 'expires_in', 'jti', 'node', 'org_id', 'refresh_token', 'scope', 'stime', 'token_type'];
const TOKEN_VIEW_KEYS = ['aud', 'client_id', 'expires_at', 'grant_id', 'issued_at', 'jkt', 'jti', 'node', 'not_before', 'replaced_at', 'revoked_at', 'scope', 'state', 'sub', 'type', 'username'];

describe('token issue, token list, refresh', () => {
  let store: TempStore;
  let web: { id: string; secret: string | null };
  let other: { id: string; secret: string | null };
  let alice: IssuedTokens;
  let oneSecond: IssuedTokens;
  let shortLived: IssuedTokens;

  beforeAll(async () => {
    store = tempStore({ inProcess: true });
    [web, other] = await Promise.all([createClient(store, ['--scope', 'read write', '--org', 'acme']), createClient(store)]);
    [alice, oneSecond] = await Promise.all([
      issue(store, web.id, 'alice', ['--sub', 'u-1']),
      issue(store, other.id, 'frank', ['--access-ttl', '1s', '--refresh-ttl', '1s']),
    ]);
    // Dave's tokens (1 s TTL) expired two seconds ago: listed as "N s ago", not "now", without waiting.
    shortLived = await issueInThePast(store, other.id, 'dave', 3_000, { accessTtlMs: 1_000, refreshTtlMs: 1_000 });
  });
  afterAll(() => store.cleanup());

  it('token issue --json prints the nine fields of spec 2.1', () => {
    expect(Object.keys(alice).sort()).toEqual(TOKEN_RESPONSE_KEYS);
    expect(alice).toMatchObject({ token_type: 'bearer', expires_in: 3600, scope: 'read write', org_id: 'acme' });
    expect(alice.access_token).toMatch(/^tca_[A-Za-z0-9_-]{43}$/);
    expect(alice.refresh_token).toMatch(/^tcr_[A-Za-z0-9_-]{43}$/);
    expect(alice.jti).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(Math.abs((alice.stime as number) - Date.now())).toBeLessThan(60_000);
    expect(oneSecond.expires_in).toBe(1);
  });

  it('token issue without --json shows the response readably', async () => {
    const r = await store.run(['token', 'issue', '--client', web.id, '--user', 'erin', '--scope', 'read', '--access-ttl', '15m']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^access_token:\s+tca_/m);
    expect(r.stdout).toMatch(/^expires_in:\s+900 \(.* UTC \(in 1[45] min\)\)$/m);
    expect(r.stdout).toMatch(/^scope:\s+read$/m);
  });

  it('token issue refuses bad input: unknown client (4), bad duration (2), scope beyond the client (2), missing --user (2)', async () => {
    const [unknown, duration, scope, missing] = await Promise.all([
      store.run(['token', 'issue', '--client', 'nope', '--user', 'a']),
      store.run(['token', 'issue', '--client', web.id, '--user', 'a', '--access-ttl', 'soon']),
      store.run(['token', 'issue', '--client', web.id, '--user', 'a', '--scope', 'admin']),
      store.run(['token', 'issue', '--client', web.id]),
    ]);
    expect(unknown.code).toBe(4);
    expect(unknown.stderr).toMatch(/no client with id "nope"/);
    expect(duration.code).toBe(2);
    expect(duration.stderr).toMatch(/"soon" is not a duration/);
    expect(scope.code).toBe(2);
    expect(scope.stderr).toMatch(/admin/);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/Missing required flag user/);
    for (const r of [unknown, duration, scope, missing]) expect(r.stdout).toBe('');
  });

  it('token list filters by client, user, type and state, and limits', async () => {
    const list = <T>(args: string[]) => store.json<{ tokens: T[]; total: number; next_cursor: string | null }>(['token', 'list', ...args]);
    const all = (await list<Record<string, unknown>>([])).tokens;
    expect(Object.keys(all[0]!).sort()).toEqual(TOKEN_VIEW_KEYS);
    const [mine, refreshOnly, limited, byClient] = await Promise.all([
      list<{ username: string }>(['--user', 'alice']),
      list<{ type: string; client_id: string }>(['--client', web.id, '--type', 'refresh_token']),
      list<unknown>(['--limit', '1']),
      list<{ client_id: string }>(['--client', other.id, '--state', 'active']),
    ]);
    expect(mine.tokens.map((t) => t.username)).toEqual(['alice', 'alice']);
    expect(mine).toMatchObject({ total: 2, next_cursor: null });
    expect(refreshOnly.tokens.length).toBeGreaterThan(0);
    expect(refreshOnly.tokens.every((t) => t.type === 'refresh_token' && t.client_id === web.id)).toBe(true);
    expect(limited.tokens).toHaveLength(1);
    expect(limited.total).toBe(all.length);
    expect(byClient.tokens.every((t) => t.client_id === other.id)).toBe(true);
  });

  it('token list --client with an id no client has: not found (exit 4), not an empty list', async () => {
    const r = await store.run(['token', 'list', '--client', `${web.id}-typo`]);
    expect(r.code).toBe(4);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(new RegExp(`no client with id "${web.id}-typo"`));
  });

  it('token list pages with --cursor: every token once, and the total on each page', async () => {
    const seen: string[] = [];
    const all = await store.json<{ tokens: { jti: string }[]; total: number }>(['token', 'list', '--limit', '1000']);
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: { tokens: { jti: string }[]; total: number; next_cursor: string | null } = await store.json(['token', 'list', '--limit', '3', ...(cursor ? ['--cursor', cursor] : [])]);
      expect(page.total).toBe(all.total);
      seen.push(...page.tokens.map((t) => t.jti));
      cursor = page.next_cursor;
      pages++;
    } while (cursor && pages < 100);
    expect(seen).toEqual(all.tokens.map((t) => t.jti));
    const human = await store.run(['token', 'list', '--limit', '1']);
    expect(human.stderr).toMatch(new RegExp(`Showing 1 of ${all.total}; next page: --cursor \\S+`));
    const bad = await store.run(['token', 'list', '--cursor', 'nonsense']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/is not a cursor that token list printed/);
  });

  it('token list shows expired tokens in their state', async () => {
    const expired = (await store.json<{ tokens: { username: string; state: string }[] }>(['token', 'list', '--user', 'dave', '--state', 'expired'])).tokens;
    expect(expired.map((t) => t.state)).toEqual(['expired', 'expired']);
    const human = await store.run(['token', 'list', '--user', 'dave']);
    expect(human.stdout).toMatch(/^JTI\s+TYPE\s+CLIENT\s+USER\s+STATE\s+EXPIRES$/m);
    expect(human.stdout).toMatch(/dave\s+expired\s+.* UTC \(\d+ s ago\)/);
  });

  it('token list rejects an unknown state (2)', async () => {
    const r = await store.run(['token', 'list', '--state', 'zombie']);
    expect(r.code).toBe(2);
  });

  it('refresh without --client-id uses the token’s own client and keeps the refresh token', async () => {
    const r = await store.json(['refresh', alice.refresh_token]);
    expect(Object.keys(r).sort()).toEqual(TOKEN_RESPONSE_KEYS);
    expect(r.refresh_token).toBe(alice.refresh_token);
    expect(r.access_token).not.toBe(alice.access_token);
    expect(r.jti).not.toBe(alice.jti);
    expect(r.scope).toBe('read write');
  });

  it('refresh --scope narrows, and refuses a wider scope', async () => {
    const narrow = await store.json(['refresh', alice.refresh_token, '--scope', 'read']);
    expect(narrow.scope).toBe('read');
    const wide = await store.run(['refresh', alice.refresh_token, '--scope', 'read admin']);
    expect(wide.code).toBe(2);
    expect(wide.stderr).toMatch(/exceeds/);
  });

  it('refresh with --client-id authenticates the client, which must own the token', async () => {
    const [ok, wrongSecret, otherClient] = await Promise.all([
      store.run(['refresh', alice.refresh_token, '--client-id', web.id, '--client-secret', web.secret!, '--json']),
      store.run(['refresh', alice.refresh_token, '--client-id', web.id, '--client-secret', 'x'.repeat(40), '--json']),
      store.run(['refresh', alice.refresh_token, '--client-id', other.id, '--client-secret', other.secret!, '--json']),
    ]);
    expect(ok.code).toBe(0);
    expect(ok.json().refresh_token).toBe(alice.refresh_token);
    expect(wrongSecret.code).toBe(2);
    expect(JSON.parse(wrongSecret.stderr).error.code).toBe('invalid_client');
    expect(otherClient.code).toBe(1);
    expect(JSON.parse(otherClient.stderr).error.code).toBe('invalid_token');
    for (const r of [wrongSecret, otherClient]) expect(r.stdout).toBe('');
  });

  it('refresh refuses a malformed token (2), an access token (2), an unknown token (4), an expired one (1) without echoing it', async () => {
    const unknownToken = 'tcr_' + 'A'.repeat(43);
    const [malformed, access, unknown, expired] = await Promise.all([
      store.run(['refresh', 'eyJhbGciOiJIUzI1NiJ9.e30.x']),
      store.run(['refresh', alice.access_token]),
      store.run(['refresh', unknownToken]),
      store.run(['refresh', shortLived.refresh_token]),
    ]);
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toMatch(/not a tokenctl token( \([^)]*\))?: tokens start with tca_ .* or tcr_/);
    expect(access.code).toBe(2);
    expect(access.stderr).toMatch(/access token/);
    expect(unknown.code).toBe(4);
    expect(expired.code).toBe(1);
    expect(expired.stderr).toMatch(/expired/);
    expect(expired.stderr).not.toContain(shortLived.refresh_token);
  });
});
