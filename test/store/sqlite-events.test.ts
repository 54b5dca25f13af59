import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildSpecAuthorization } from '../../src/engine/client-auth.js';
import { Engine } from '../../src/engine/engine.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { tokenctl } from '../helpers/cli.js';
import { post, startServe, stopServe } from '../helpers/load.js';
import { runNode, spawnNode } from '../helpers/node-script.js';
import { T0, makeClient, makeToken } from '../helpers/records.js';
import { makeEvent, makePushReceiver, makePollReceiver } from './events-contract.js';

/*
 * Security events on one SQLite file shared by several processes (serve --workers N, several
 * nodes, the CLI beside a server): leases raced by real processes, and an event that outlives the
 * process that wrote it. The single-process semantics are the contract's (events-contract.ts).
 */

describe('SqliteStore security events across processes', () => {
  let dir: string;
  let file: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tokenctl-events-'));
    file = path.join(dir, 'tokens.db');
  });
  afterEach(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a push receiver is never held by two deliverers at once: processes claiming for hundreds of rounds', { timeout: 120_000 }, async () => {
    const PROCESSES = 4;
    const ROUNDS = 300;
    const LEASE_MS = 25;
    const RECEIVERS = ['r1', 'r2', 'r3', 'r4', 'r5'];
    const store = await SqliteStore.open(file);
    await store.createClient(makeClient({ id: 'client-1' }), {});
    for (const id of RECEIVERS) await store.createReceiver(makePushReceiver(id), {});
    // Events due long ago, never delivered: every receiver is claimable whenever its lease has ended.
    for (let i = 0; i < 3; i++) {
      const t = makeToken({ clientId: 'client-1' });
      await store.insertTokens([t]);
      await store.revokeToken(t.jti, T0, false, { event: makeEvent({ jti: t.jti }, T0) });
    }
    await store.close();
    // Each claim is logged with the `now` it was made at: the lease runs from now to now + LEASE_MS.
    // Now and then the holder settles a delivery as a retry due at once (still claimable), or a
    // holder whose lease has passed to another settles late (ignored).
    const script = `
      const { SqliteStore } = await import(process.env.STORE_MODULE);
      const store = await SqliteStore.open(process.env.DB);
      const owner = process.env.WHO;
      const claims = [];
      for (let i = 0; i < ${ROUNDS}; i++) {
        const now = Date.now();
        const got = await store.claimPushReceivers(owner, now, ${LEASE_MS}, 2, 1);
        for (const c of got) claims.push([c.receiver.id, now]);
        if (got.length > 0 && i % 3 === 0) {
          const [c] = got;
          await store.settleDelivery(owner, c.receiver.id, c.deliveries[0].id, { kind: 'retry', at: now, retryAt: now, error: 'HTTP 503' });
        }
        await new Promise((r) => setTimeout(r, Math.random() * 4));
      }
      await store.close();
      process.stdout.write(JSON.stringify(claims));`;
    const results = await Promise.all(Array.from({ length: PROCESSES }, (_, i) => runNode(script, { DB: file, WHO: `p${i}` })));
    expect(results.map((r) => r.stderr.trim())).toEqual(results.map(() => ''));
    expect(results.map((r) => r.code)).toEqual(results.map(() => 0));

    const byReceiver = new Map<string, { owner: string; now: number }[]>();
    results.forEach((r, i) => {
      for (const [id, now] of JSON.parse(r.stdout) as [string, number][]) {
        const list = byReceiver.get(id) ?? [];
        list.push({ owner: `p${i}`, now });
        byReceiver.set(id, list);
      }
    });
    let claims = 0;
    let handovers = 0;
    let overlapping = 0;
    for (const list of byReceiver.values()) {
      list.sort((a, b) => a.now - b.now);
      claims += list.length;
      for (let k = 1; k < list.length; k++) {
        if (list[k]!.now < list[k - 1]!.now + LEASE_MS) overlapping++; // claimed while the previous lease was live
        if (list[k]!.owner !== list[k - 1]!.owner) handovers++;
      }
    }
    console.log(`[race sqlite leases] processes=${PROCESSES} rounds=${ROUNDS} claims=${claims} handovers=${handovers} overlapping=${overlapping}`);
    expect(overlapping).toBe(0);
    // A real race: the receivers were claimed often, and changed hands between processes.
    expect(byReceiver.size).toBe(RECEIVERS.length);
    expect(claims).toBeGreaterThan(100);
    expect(handovers).toBeGreaterThan(20);
  });

  for (const mode of ['a CLI', 'a server (commits synced off the event loop)']) {
    it(`the events are in the file once the revocations have returned, even if ${mode} is killed right after`, { timeout: 60_000 }, async () => {
      const store = await SqliteStore.open(file);
      await store.createClient(makeClient({ id: 'client-1' }), {});
      await store.createReceiver(makePollReceiver('poll-1', 'client-1'), {});
      const tokens = [makeToken({ clientId: 'client-1' }), makeToken({ clientId: 'client-1' }), makeToken({ clientId: 'client-1' })];
      await store.insertTokens(tokens);
      await store.close();
      const events = tokens.map((t) => makeEvent({ jti: t.jti }));
      // Three revocations in one turn: one group commit, their events in one outbox row.
      const script = `
        const { SqliteStore } = await import(process.env.STORE_MODULE);
        const store = await SqliteStore.open(process.env.DB, { backgroundCheckpoints: process.env.SERVER === '1' });
        const revoked = await Promise.all(JSON.parse(process.env.EVENTS).map((e) => store.revokeToken(e.jti, ${T0 + 1}, false, { event: e })));
        process.stdout.write(revoked.every(Boolean) ? 'revoked\\n' : 'not revoked\\n');
        setInterval(() => {}, 1000); // and stays, until killed`;
      const child = spawnNode(script, { DB: file, EVENTS: JSON.stringify(events), SERVER: mode.startsWith('a server') ? '1' : '0' });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const said = await new Promise<string>((resolve) => {
        let out = '';
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes('\n')) {
            child.kill('SIGKILL'); // at once: no close(), no checkpoint
            resolve(out.trim());
          }
        });
        child.on('close', () => resolve(out.trim()));
      });
      await new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve(null) : child.on('close', resolve)));
      expect(said, stderr).toBe('revoked');
      expect(child.signalCode).toBe('SIGKILL');
      const after = await SqliteStore.open(file, { create: false });
      try {
        for (const t of tokens) expect((await after.findTokenByJti(t.jti))?.revokedAt).toBe(T0 + 1);
        expect(await after.pendingDeliveries('poll-1', 10)).toEqual([{ receiverId: 'poll-1', id: events[0]!.id, events, attempts: 0 }]);
      } finally {
        await after.close();
      }
    });
  }

  it('every revocation of a running server (two workers), of the CLI and of the engine writes its event, each once, in order', { timeout: 120_000 }, async () => {
    const store = await SqliteStore.open(file);
    const engine = new Engine({ store });
    try {
      const { client, client_secret } = await engine.createClient({ name: 'events', id: 'events-client' }, 'test');
      await store.createReceiver(makePollReceiver('poll-1', client.client_id), {});
      const [g1, g2] = [await engine.issue({ clientId: client.client_id, username: 'ann' }), await engine.issue({ clientId: client.client_id, username: 'bob' })];
      const serve = await startServe(['--db', file, '--workers', '2', '--log-level', 'warn']);
      try {
        const form = { client_id: client.client_id, client_secret: client_secret! };
        // RFC 7009 on the server: the refresh token ends its grant (scope grant); again: nothing new.
        for (let i = 0; i < 2; i++) expect((await post(`${serve.url}/oauth/revocation`, { token: g1.refresh_token, ...form })).status).toBe(200);
        // An access token alone (scope token).
        expect((await post(`${serve.url}/oauth/revocation`, { token: g2.access_token, token_type_hint: 'access_token' }, { authorization: buildSpecAuthorization(client.client_id, client_secret!) })).status).toBe(200);
      } finally {
        await stopServe(serve);
      }
      // The CLI beside it: a user in bulk (scope user), once for all of the user's tokens.
      const cli = await tokenctl(['revoke', '--user', 'bob', '--yes', '--json', '--db', file], { timeoutMs: 60_000 });
      expect(cli.code, cli.stderr).toBe(0);
      await engine.deleteClient(client.client_id, 'cli:test'); // scope client, reason client_deleted
      const events = (await store.pendingDeliveries('poll-1', 100)).flatMap((d) => d.events);
      expect(events.map((e) => [e.scope, e.reason, e.username ?? null, e.tokenType ?? null])).toEqual([
        ['grant', 'revoked', 'ann', 'refresh_token'],
        ['token', 'revoked', 'bob', 'access_token'],
        ['user', 'revoked', 'bob', null],
        ['client', 'client_deleted', null, null],
      ]);
      expect(events.every((e) => e.clientId === undefined || e.clientId === client.client_id)).toBe(true);
      expect(new Set(events.map((e) => e.id)).size).toBe(4);
    } finally {
      await store.close();
    }
  });
});
