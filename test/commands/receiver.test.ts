import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderReceiverList } from '../../src/cli/render/receiver.js';
import type { ReceiverStatusView } from '../../src/engine/receivers.js';
import { createClient, issue, tempStore, type TempStore } from '../helpers/cli.js';

/** receiver add|list|remove|retry and signing-key list|rotate through their --json output, on a SQLite store. */
describe('receiver commands', () => {
  let store: TempStore;
  beforeAll(() => {
    store = tempStore({ inProcess: true });
  });
  afterAll(() => store.cleanup());

  it('adds a push receiver with an Authorization from the environment, never shown back', async () => {
    const secret = 'Bearer very-secret-receiver-credential';
    const r = await store.run(['receiver', 'add', 'gw', '--push', 'https://rs.example.test:8443/events', '--authorization-env', 'RS_AUTH', '--json'], { env: { RS_AUTH: secret } });
    expect(r.code).toBe(0);
    expect(r.json()).toMatchObject({ id: 'gw', delivery: 'push', endpoint_url: 'https://rs.example.test:8443/events', audience: 'https://rs.example.test:8443', authorization: true, ca: false });
    const human = await store.run(['receiver', 'list']);
    expect(human.stdout).toMatch(/gw\s+push\s+https:\/\/rs\.example\.test:8443\/events/);
    const list = await store.run(['receiver', 'list', '--json']);
    for (const out of [r.stdout, human.stdout, list.stdout]) expect(out).not.toContain('very-secret');
    expect(list.json()).toEqual([expect.objectContaining({ id: 'gw', pending: 0, dead: 0, oldest_pending_at: null, last_error: null, last_delivered_at: null })]);
  });

  it('adds a poll receiver for a confidential client; its audience is its id', async () => {
    const client = await createClient(store);
    expect(await store.json(['receiver', 'add', 'rs-poll', '--poll', '--client', client.id])).toMatchObject({ delivery: 'poll', client_id: client.id, audience: 'rs-poll', endpoint_url: null });
    // One poll receiver per client.
    expect((await store.run(['receiver', 'add', 'rs-poll-2', '--poll', '--client', client.id])).code).toBe(2);
  });

  it('a retention set with add, changed with update (audited), shown by show and list; out of range refused', async () => {
    const client = await createClient(store);
    expect(await store.json(['receiver', 'add', 'rs-kept', '--poll', '--client', client.id, '--retention', '2h'])).toMatchObject({ id: 'rs-kept', retention_ms: 7_200_000 });
    expect(await store.json(['receiver', 'show', 'rs-kept'])).toMatchObject({ id: 'rs-kept', retention_ms: 7_200_000, pending: 0, dead: 0 });
    expect(await store.json(['receiver', 'update', 'rs-kept', '--retention', '7d'])).toMatchObject({ id: 'rs-kept', retention_ms: 7 * 86_400_000 });
    const listed = (await store.json<ReceiverStatusView[]>(['receiver', 'list'])).find((r) => r.id === 'rs-kept');
    expect(listed?.retention_ms).toBe(7 * 86_400_000);
    expect((await store.run(['receiver', 'list'])).stdout).toMatch(/RETENTION[\s\S]*rs-kept.*7 d/);
    expect((await store.run(['receiver', 'show', 'rs-kept'])).stdout).toMatch(/retention:?\s+7 d \(then a dead letter\)/);
    const audit = await store.json<{ entries: { action: string; target: string }[] } | { action: string; target: string }[]>(['audit']);
    const entries = Array.isArray(audit) ? audit : audit.entries;
    expect(entries.filter((a) => a.action === 'receiver.update').map((a) => a.target)).toEqual(['receiver:rs-kept']);
    for (const bad of ['30s', '91d']) expect((await store.run(['receiver', 'update', 'rs-kept', '--retention', bad])).stderr).toMatch(/retention must be from 1m to 90d/);
    expect((await store.run(['receiver', 'update', 'nobody', '--retention', '1h'])).code).not.toBe(0);
    // The default, for a receiver added without it: 24 hours.
    const other = await createClient(store);
    expect(await store.json(['receiver', 'add', 'rs-default', '--poll', '--client', other.id])).toMatchObject({ retention_ms: 86_400_000 });
  });

  it('--events and --alg choose its stream (add and update), shown by show, refused as the SSF stream API refuses them', async () => {
    const TOKENS = 'urn:tokenctl:secevent:tokens-revoked';
    const SESSION = 'https://schemas.openid.net/secevent/caep/event-type/session-revoked';
    const client = await createClient(store);
    expect(await store.json(['receiver', 'add', 'rs-caep', '--poll', '--client', client.id, '--events', 'session-revoked', '--alg', 'RS256'])).toMatchObject({
      events_requested: [SESSION], events_delivered: [SESSION], signing_alg: 'RS256', status: 'enabled',
    });
    // An operator's receiver without them: tokenctl's own event, ES256.
    expect(await store.json(['receiver', 'add', 'gw-plain', '--push', 'https://plain.example.test/events'])).toMatchObject({ events_requested: [TOKENS], signing_alg: 'ES256' });
    const updated = await store.json(['receiver', 'update', 'rs-caep', '--events', `tokens-revoked,${SESSION},urn:example:other`]);
    expect(updated).toMatchObject({ events_requested: [TOKENS, SESSION, 'urn:example:other'], events_delivered: [TOKENS, SESSION], signing_alg: 'RS256', retention_ms: 86_400_000 });
    const shown = (await store.run(['receiver', 'show', 'rs-caep'])).stdout;
    expect(shown).toMatch(/events:?\s+urn:tokenctl:secevent:tokens-revoked, https:\/\/schemas\.openid\.net\/secevent\/caep\/event-type\/session-revoked, urn:example:other \(not supported: not delivered\)/);
    expect(shown).toMatch(/signing:?\s+RS256/);
    expect(await store.json(['receiver', 'update', 'rs-caep', '--alg', 'ES256'])).toMatchObject({ signing_alg: 'ES256', events_requested: [TOKENS, SESSION, 'urn:example:other'] });
    for (const [args, message] of [
      [['receiver', 'add', 'x-alg', '--push', 'https://x.example.test/events', '--alg', 'HS256'], /--alg must be ES256 or RS256/],
      [['receiver', 'update', 'rs-caep', '--alg', 'none'], /--alg must be ES256 or RS256/],
      [['receiver', 'update', 'rs-caep', '--events', 'session-revoked,,tokens-revoked'], /--events must be a list of at most 64 event type URIs/],
      [['receiver', 'update', 'rs-caep'], /nothing to change: give --retention, --events or --alg/],
      [['receiver', 'update', 'rs-caep', '--events', 'tokens-revoked,nope'], /--events: "nope" is neither tokens-revoked nor session-revoked nor an event type URI/],
      [['receiver', 'add', 'x-none', '--push', 'https://x.example.test/events', '--events', 'urn:example:other'], /--events: tokenctl sends none of these events, so the receiver would get nothing/],
    ] as [string[], RegExp][]) {
      const r = await store.run(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(message);
    }
    expect((await store.json(['receiver', 'show', 'rs-caep']))).toMatchObject({ signing_alg: 'ES256' });
  });

  it('refuses what cannot be a receiver, with clear errors', async () => {
    const pub = await createClient(store, ['--public']);
    const cases: [string[], RegExp][] = [
      [['receiver', 'add', 'x1', '--push', 'http://rs.example.test/events'], /must be https/],
      [['receiver', 'add', 'x2', '--push', 'not a url'], /not a URL/],
      [['receiver', 'add', 'x3', '--push', 'https://user:pw@rs.example.test/'], /credentials/],
      [['receiver', 'add', 'bad id!', '--push', 'https://rs.example.test/'], /letters, digits/],
      [['receiver', 'add', 'x4', '--poll', '--client', 'no-such-client'], /no client/],
      [['receiver', 'add', 'x5', '--poll', '--client', pub.id], /public/],
      [['receiver', 'add', 'gw', '--push', 'https://rs.example.test/'], /already exists/],
      [['receiver', 'add', 'x6', '--push', 'https://rs.example.test/', '--authorization-env', 'NOT_SET_ANYWHERE'], /not set/],
      [['receiver', 'add', 'x7'], /push|poll/],
    ];
    for (const [args, message] of cases) {
      const r = await store.run(args);
      expect(r.code, args.join(' ')).not.toBe(0);
      expect(r.stderr, args.join(' ')).toMatch(message);
    }
    // Plain http:// to this machine is fine (development), once private addresses are allowed.
    expect((await store.run(['receiver', 'add', 'dev', '--push', 'http://127.0.0.1:9999/events'])).stderr).toMatch(/127\.0\.0\.1 is a loopback address \(allowed with --allow-private-network\)/);
    const dev = await store.run(['receiver', 'add', 'dev', '--push', 'http://127.0.0.1:9999/events', '--allow-private-network', '--json']);
    expect(dev.code).toBe(0);
    expect(JSON.parse(dev.stdout)).toMatchObject({ endpoint_url: 'http://127.0.0.1:9999/events', allow_private_network: true });
    const caFile = join(store.dir, 'not-a-ca.pem');
    writeFileSync(caFile, 'hello');
    expect((await store.run(['receiver', 'add', 'x8', '--push', 'https://rs.example.test/', '--ca', caFile])).stderr).toMatch(/not a PEM certificate/);
  });

  it('counts pending deliveries per receiver; remove asks before dropping them, and needs --yes without a terminal', async () => {
    const client = await createClient(store);
    const t = await issue(store, client.id, 'alice');
    expect((await store.run(['revoke', t.access_token, '--json'])).code).toBe(0);
    const list = await store.json<{ id: string; pending: number; oldest_pending_at: number | null }[]>(['receiver', 'list']);
    for (const r of list) {
      expect(r.pending, r.id).toBe(1);
      expect(r.oldest_pending_at).toEqual(expect.any(Number));
    }
    const refused = await store.run(['receiver', 'remove', 'dev']);
    expect(refused.code).toBe(5);
    expect(refused.stderr).toMatch(/--yes/);
    expect(await store.json(['receiver', 'remove', 'dev', '--yes'])).toEqual({ id: 'dev', dropped: 1, store: store.db });
    expect((await store.run(['receiver', 'remove', 'dev', '--yes'])).code).toBe(4);
    expect(await store.json(['receiver', 'retry', 'gw'])).toEqual({ id: 'gw', requeued: 0 });
    expect((await store.run(['receiver', 'retry', 'nobody'])).code).toBe(4);
  });

  it('signing-key rotate makes a new current key; list shows the old one retired and published', async () => {
    const first = await store.json<{ kid: string }>(['signing-key', 'rotate']);
    const second = await store.json<{ kid: string }>(['signing-key', 'rotate']);
    expect(second.kid).not.toBe(first.kid);
    const keys = await store.json<{ kid: string; current: boolean; published: boolean }[]>(['signing-key', 'list']);
    expect(keys.slice(0, 2)).toMatchObject([
      { kid: second.kid, current: true, published: true },
      { kid: first.kid, current: false, published: true },
    ]);
    expect(JSON.stringify(keys)).not.toMatch(/"d"|privateJwk/);
    // Each rotation is in the audit log, with the operator who made it.
    const { entries: audit } = await store.json<{ entries: { action: string; actor: string; target: string; count: number; detail: string }[] }>(['audit']);
    const rotations = audit.filter((e) => e.action === 'signing_key.rotate');
    expect(rotations.map((e) => e.target)).toEqual([`key:${second.kid}`, `key:${first.kid}`]);
    for (const e of rotations) expect(e).toMatchObject({ actor: expect.stringMatching(/^cli:/), count: 1, detail: 'ES256' });
  });

  it('receiver list prints a receiver\'s terminal escape sequences as text, never raw', async () => {
    const hostile = '\u001b]0;owned\u0007\u001b[2J\u009b31m';
    const added = await store.run(['receiver', 'add', 'esc', '--push', 'https://esc.example.test/events', '--audience', `aud${hostile}`]);
    expect(added.code).toBe(0);
    expect(added.stdout).toContain('aud\\u001b]0;owned');
    const human = await store.run(['receiver', 'list']);
    expect(human.stdout).toContain('esc');
    // What the receiver itself answered (RFC 8935 error description), as the deliverer stores it.
    const view = (await store.json<ReceiverStatusView[]>(['receiver', 'list'])).find((r) => r.id === 'esc')!;
    expect(view.audience).toBe(`aud${hostile}`); // --json keeps the data; JSON escapes C0 itself
    const rendered = renderReceiverList([{ ...view, last_error: `HTTP 400 invalid_request: ${hostile}` }], Date.now());
    for (const out of [added.stdout, human.stdout, rendered]) {
      // eslint-disable-next-line no-control-regex -- the raw sequences must not be there
      expect(out).not.toMatch(/[\u0007\u009b]|\u001b\[2J|\u001b\]0/);
    }
    expect(rendered).toContain('\\u001b]0;owned\\u0007\\u001b[2J\\u009b31m');
  });
});

