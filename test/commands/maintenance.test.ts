import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, issue, issueInThePast, tempStore, type IssuedTokens, type TempStore } from '../helpers/cli.js';

/** purge, status and audit on one store: 2 expired tokens, 2 revoked, 2 active. */
describe('purge, status, audit', () => {
  let store: TempStore;
  let client: { id: string; secret: string | null };
  let issued: IssuedTokens[];

  beforeAll(async () => {
    store = tempStore({ inProcess: true });
    client = await createClient(store);
    issued = await Promise.all([
      issueInThePast(store, client.id, 'short', 10_000, { accessTtlMs: 1000, refreshTtlMs: 1000 }), // expired 9 s ago
      issue(store, client.id, 'gone'),
      issue(store, client.id, 'alive'),
    ]);
    await store.json(['revoke', '--user', 'gone', '--yes']);
  });
  afterAll(() => store.cleanup());

  it('status --json counts clients and tokens by type and state, and the oldest expired token', async () => {
    const s = await store.json(['status']);
    expect(Object.keys(s).sort()).toEqual(['clients', 'events', 'oldest_expired_at', 'schema_version', 'store', 'tokens']);
    expect(s.events).toEqual({ receivers: 0, pending: 0, dead: 0, oldest_pending_at: null, lag_warning_ms: 60_000, behind: [] });
    expect(s.store).toBe(store.db);
    expect(s.schema_version).toBeGreaterThanOrEqual(1);
    expect(s.clients).toBe(1);
    expect(s.tokens).toEqual({
      access_token: { active: 1, expired: 1, revoked: 1 },
      refresh_token: { active: 1, expired: 1, revoked: 1 },
    });
    expect(s.oldest_expired_at).toBe((issued[0]!.stime as number) + 1000);
  });

  it('status shows the store, the counts and the oldest expired token readably', async () => {
    const r = await store.run(['status']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(store.db);
    expect(r.stdout).toMatch(/^\s+access\s+1\s+1\s+1$/m);
    expect(r.stdout).toMatch(/oldest expired token:\s+\d{4}-\d\d-\d\d .* UTC \(\d+ s ago\)/);
    expect(r.stdout).toMatch(/^security events:\s+no receiver \(none are written\)$/m);
  });

  it('purge refuses without --yes and without a terminal (5), and --dry-run only counts', async () => {
    const refused = await store.run(['purge']);
    expect(refused.code).toBe(5);
    expect(refused.stderr).toMatch(/Nothing purged/);
    const dry = await store.json(['purge', '--dry-run']);
    expect(dry).toMatchObject({ older_than_ms: 0, purgeable: 4, deleted: 0, dry_run: true });
    const older = await store.json(['purge', '--older-than', '1h', '--dry-run']);
    expect(older).toMatchObject({ older_than_ms: 3_600_000, purgeable: 0 });
    const bad = await store.run(['purge', '--older-than', 'ages', '--yes']);
    expect(bad.code).toBe(2);
    expect((await store.json(['status'])).tokens.access_token.expired).toBe(1);
  });

  it('purge --audit-older-than: a retention of at least a day, or never; the default keeps 400 days', async () => {
    const dry = await store.json(['purge', '--dry-run']);
    expect(dry).toMatchObject({ audit_older_than_ms: 400 * 86_400_000, audit_purgeable: 0 });
    const never = await store.json(['purge', '--dry-run', '--audit-older-than', 'never']);
    expect(never).toMatchObject({ audit_older_than_ms: null, audit_before: null, audit_purgeable: 0 });
    const week = await store.json(['purge', '--dry-run', '--audit-older-than', '7d']);
    expect(week.audit_before).toBeGreaterThan(Date.now() - 7 * 86_400_000 - 60_000);
    const tooShort = await store.run(['purge', '--dry-run', '--audit-older-than', '1h']);
    expect(tooShort.code).toBe(2);
    expect(tooShort.stderr).toMatch(/shorter than a day/);
  });

  it('purge --yes deletes every expired or revoked token in batches, and keeps the active ones', async () => {
    const r = await store.json(['purge', '--yes', '--batch-size', '1']);
    expect(r).toMatchObject({ purgeable: 4, deleted: 4, dry_run: false });
    expect(r.before).toBeLessThanOrEqual(Date.now());
    const s = await store.json(['status']);
    expect(s.tokens.access_token).toEqual({ active: 1, expired: 0, revoked: 0 });
    expect(s.oldest_expired_at).toBeNull();
    const again = await store.run(['purge']); // nothing left: nothing to confirm
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/nothing to purge/);
  });

  it('audit lists what happened, newest first, and --json exports it', async () => {
    type Page = { entries: { action: string; at: number; actor: string; count: number; target: string }[]; total: number; next_cursor: string | null };
    const { entries, total, next_cursor } = await store.json<Page>(['audit']);
    const actions = entries.map((e) => e.action);
    expect(total).toBe(entries.length);
    expect(next_cursor).toBeNull();
    // One line per operation: the purge of --batch-size 1 is one line with its total.
    expect(entries.filter((e) => e.action === 'purge').map((e) => e.count)).toEqual([4]);
    expect(actions[0]).toBe('purge');
    expect(actions).toContain('token.revoke_bulk');
    expect(actions).toContain('client.create');
    expect(actions.some((a) => a.endsWith('.batch'))).toBe(false);
    expect(entries.map((e) => e.at)).toEqual([...entries.map((e) => e.at)].sort((a, b) => b - a));
    expect(entries.every((e) => e.actor.startsWith('cli:'))).toBe(true);
    // --batches: one line per batch too, each written with its batch, summing to what was deleted.
    const detail = await store.json<Page>(['audit', '--batches']);
    expect(detail.entries.filter((e) => e.action === 'purge.batch').map((e) => e.count)).toEqual([1, 1, 1, 1]);
    expect(detail.total).toBeGreaterThan(total);

    const [limited, byClient, recent, human] = await Promise.all([
      store.json<Page>(['audit', '--limit', '1']),
      store.json<Page>(['audit', '--client', client.id]),
      store.json<Page>(['audit', '--since', '1h']),
      store.run(['audit', '--limit', '2']),
    ]);
    expect(limited.entries).toHaveLength(1);
    expect(limited.total).toBe(total);
    expect(byClient.entries.length).toBeGreaterThan(0);
    expect(recent.entries).toHaveLength(entries.length);
    expect(human.stdout).toMatch(/^WHEN\s+ACTOR\s+ACTION\s+TARGET\s+COUNT\s+DETAIL$/m);
    expect(human.stderr).toMatch(new RegExp(`^Showing 2 of ${total}; next page: --cursor \\S+\n$`));
  });

  it('audit pages like token list: every line once, newest first, through the cursors', async () => {
    type Page = { entries: { id: number }[]; total: number; next_cursor: string | null };
    const all = await store.json<Page>(['audit', '--batches']);
    const seen: number[] = [];
    let cursor: string | null = null;
    do {
      const page: Page = await store.json<Page>(['audit', '--batches', '--limit', '3', ...(cursor ? ['--cursor', cursor] : [])]);
      expect(page.total).toBe(all.total);
      seen.push(...page.entries.map((e) => e.id));
      cursor = page.next_cursor;
    } while (cursor !== null);
    expect(seen).toEqual(all.entries.map((e) => e.id));
    const bad = await store.run(['audit', '--cursor', 'nonsense']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('is not a cursor that audit printed');
  });

  it('token list, status, audit and client list/show never print an issued token or the client secret', async () => {
    const outputs = await Promise.all(
      [
        ['token', 'list'],
        ['token', 'list', '--json'],
        ['status'],
        ['status', '--json'],
        ['audit'],
        ['audit', '--json'],
        ['client', 'list', '--json'],
        ['client', 'show', client.id],
      ].map((args) => store.run(args)),
    );
    const secrets = [client.secret!, ...issued.flatMap((t) => [t.access_token, t.refresh_token])];
    for (const r of outputs) {
      expect(r.code).toBe(0);
      for (const secret of secrets) {
        expect(r.stdout).not.toContain(secret);
        expect(r.stderr).not.toContain(secret);
      }
      expect(r.stdout).not.toMatch(/tc[ar]_[A-Za-z0-9_-]{43}/);
    }
  });
});

/** status and the receivers: what waits for them, summed over every receiver (receiver list has the detail). */
describe('status, with event receivers', () => {
  let store: TempStore;

  beforeAll(() => {
    store = tempStore({ inProcess: true });
  });
  afterAll(() => store.cleanup());

  it('counts the receivers, and the deliveries pending since the oldest event, until they are taken', async () => {
    const client = await createClient(store);
    const [a, b] = await Promise.all([issue(store, client.id, 'dora'), issue(store, client.id, 'erik')]);
    await store.json(['receiver', 'add', 'rs', '--poll', '--client', client.id]);
    await store.json(['receiver', 'add', 'gw', '--push', 'https://rs.example.test:8443/events']);
    expect((await store.json(['status'])).events).toEqual({ receivers: 2, pending: 0, dead: 0, oldest_pending_at: null, lag_warning_ms: 60_000, behind: [] });
    expect((await store.run(['status'])).stdout).toMatch(/^security events:\s+2 receivers, nothing pending$/m);

    const before = Date.now();
    await store.json(['revoke', a!.access_token]);
    await store.json(['revoke', b!.access_token]);
    const s = await store.json(['status']);
    // Two revocations, each its own commit: two deliveries for each of the two receivers.
    expect(s.events).toMatchObject({ receivers: 2, pending: 4, dead: 0 });
    expect(s.events.oldest_pending_at).toBeGreaterThanOrEqual(before);
    expect(s.events.oldest_pending_at).toBeLessThanOrEqual(Date.now());
    expect((await store.run(['status'])).stdout).toMatch(/^security events:\s+2 receivers, 4 pending since \d{4}-\d\d-\d\d .* UTC \((now|\d+ s ago)\)$/m);
    // Behind once the oldest pending event is older than the lag warning (1s here, as serve's flag):
    // the two events moved 2 s into the past rather than waited for.
    const db = new Database(store.db);
    try {
      db.prepare('UPDATE security_events SET at = at - 2000').run();
    } finally {
      db.close();
    }
    expect(await store.json(['status', '--event-lag-warning', '1s'])).toMatchObject({ events: { lag_warning_ms: 1000, behind: ['gw', 'rs'] } });
    expect((await store.run(['status', '--event-lag-warning', '1s'])).stdout).toMatch(/pending since .*; behind: gw, rs — tokenctl receiver list shows why$/m);

    await store.json(['receiver', 'remove', 'gw', '--yes']);
    await store.json(['receiver', 'remove', 'rs', '--yes']);
    expect((await store.json(['status'])).events).toEqual({ receivers: 0, pending: 0, dead: 0, oldest_pending_at: null, lag_warning_ms: 60_000, behind: [] });
  });
});
