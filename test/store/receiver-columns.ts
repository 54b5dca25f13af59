import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import type { AuditEntry, TokenStore } from '../../src/store/store.js';
import { HOUR, T0, makeClient, makeToken } from '../helpers/records.js';
import { makePushReceiver } from './events-contract.js';

/**
 * What the SQL stores keep beside a receiver's stream JSON, on SQLite and PostgreSQL: the
 * generated `paused` column that the push claim reads, right whoever writes the JSON (a node of
 * the release before writes nothing else), and a change of several fields (`receiver update
 * --events … --retention …`) made in one transaction with its audit line, or not at all.
 */

/** A store, and a way to run SQL on its database beside it, as another node would. */
export interface Backend {
  store: TokenStore;
  /** Runs `sql` with `params` ($1, $2, … on both) on a connection of its own. */
  sql(sql: string, params?: unknown[]): Promise<unknown[]>;
  cleanup(): Promise<void>;
}

/** A SQLite store in a file of its own, and a second connection to the file. */
export async function sqliteBackend(): Promise<Backend> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tokenctl-receiver-columns-'));
  const file = path.join(dir, 'tokens.db');
  const store = await SqliteStore.open(file);
  const other = new Database(file);
  other.pragma('busy_timeout = 5000');
  return {
    store,
    sql: async (sql, params = []) => {
      const statement = other.prepare(sql.replace(/\$\d+/g, '?'));
      return statement.reader ? statement.all(...params) : (statement.run(...params), []);
    },
    cleanup: async () => {
      other.close();
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

const AT = T0 + 60_000;

export function describeReceiverColumns(name: string, open: () => Promise<Backend>): void {
  describe(`receiver columns on ${name}`, () => {
    const withBackend = async (test: (b: Backend) => Promise<void>) => {
      const b = await open();
      try {
        await b.store.createClient(makeClient({ id: 'client-1' }), {});
        await test(b);
      } finally {
        await b.cleanup();
      }
    };
    const emit = async (store: TokenStore) => {
      const t = makeToken({ clientId: 'client-1' });
      await store.insertTokens([t]);
      expect(await store.revokeToken(t.jti, AT, false, { event: { id: randomUUID(), at: AT, reason: 'revoked', scope: 'token', jti: t.jti, clientId: 'client-1' } })).toBe(true);
    };
    const claimed = async (store: TokenStore, now: number) => (await store.claimPushReceivers('node-a', now, 1_000, 10, 10)).map((c) => c.receiver.id);

    it('paused follows the stream JSON that another node writes alone, however it is formatted', async () => {
      await withBackend(async ({ store, sql }) => {
        await store.createReceiver(makePushReceiver('rs'), {});
        await emit(store);
        const paused = async () => Boolean(((await sql('SELECT paused FROM receivers WHERE id = $1', ['rs'])) as { paused: unknown }[])[0]!.paused);
        expect(await paused()).toBe(false);
        // What an older node writes: the JSON, nothing else (formatted otherwise, to be sure the text does not matter).
        await sql('UPDATE receivers SET stream = $1 WHERE id = $2', ['{ "status" : "paused", "alg": "ES256" }', 'rs']);
        expect(await paused()).toBe(true);
        expect(await claimed(store, AT)).toEqual([]);
        await sql('UPDATE receivers SET stream = $1 WHERE id = $2', ['{"status":"enabled","description":"\\"status\\":\\"paused\\""}', 'rs']);
        expect(await paused()).toBe(false);
        expect(await claimed(store, AT + 1)).toEqual(['rs']);
      });
    });

    it('paused is read from settings that hold a NUL (JSON.stringify writes \\u0000), and the store takes them', async () => {
      await withBackend(async ({ store }) => {
        await store.createReceiver(makePushReceiver('rs'), {});
        await emit(store);
        const stream = JSON.stringify({ status: 'paused', description: 'a\u0000b', verification: { jti: 'v', state: '\\u0000\u0000', at: T0 } });
        expect(stream).toContain('\\u0000');
        expect(await store.updateReceiver('rs', { stream }, {})).toBe(true);
        expect((await store.getReceiver('rs'))!.stream).toBe(stream);
        expect(await claimed(store, AT)).toEqual([]);
        expect(await store.updateReceiver('rs', { stream: stream.replace('"paused"', '"enabled"') }, {})).toBe(true);
        expect(await claimed(store, AT + 1)).toEqual(['rs']);
      });
    });

    it('a change of the stream and the retention whose audit line fails leaves the receiver as it was', async () => {
      await withBackend(async ({ store }) => {
        const before = makePushReceiver('rs', { stream: '{"status":"enabled"}' });
        await store.createReceiver(before, {});
        // The audit table's NOT NULL refuses it: the second write of the change's transaction.
        const failing = { at: T0, actor: null, action: 'receiver.update', target: 'receiver:rs', count: 1, detail: 'x' } as unknown as AuditEntry;
        await expect(store.updateReceiver('rs', { stream: '{"status":"paused"}', retentionMs: 7 * 24 * HOUR }, { audit: failing })).rejects.toThrow();
        expect(await store.getReceiver('rs')).toEqual(before);
        expect(await store.listAudit({})).toEqual([]);
        // The same change with a line that can be written: all of it.
        const audit: AuditEntry = { ...failing, actor: 'cli:op' };
        expect(await store.updateReceiver('rs', { stream: '{"status":"paused"}', retentionMs: 7 * 24 * HOUR }, { audit })).toBe(true);
        expect(await store.getReceiver('rs')).toEqual({ ...before, stream: '{"status":"paused"}', retentionMs: 7 * 24 * HOUR });
        expect((await store.listAudit({})).map((a) => a.actor)).toEqual(['cli:op']);
      });
    });

    it('a write conditional on the stream (ifStream) lands only over exactly that JSON, null included', async () => {
      await withBackend(async ({ store }) => {
        await store.createReceiver(makePushReceiver('rs', { stream: null }), {});
        expect(await store.updateReceiver('rs', { stream: '{"status":"enabled"}', ifStream: '{"status":"paused"}' }, {})).toBe(false);
        expect((await store.getReceiver('rs'))!.stream).toBeNull();
        expect(await store.updateReceiver('rs', { stream: '{"status":"enabled"}', ifStream: null }, {})).toBe(true);
        expect(await store.updateReceiver('rs', { stream: '{"status":"disabled"}', ifStream: null }, {})).toBe(false);
        expect(await store.updateReceiver('rs', { stream: '{"status":"disabled"}', ifStream: '{"status":"enabled"}' }, {})).toBe(true);
        expect((await store.getReceiver('rs'))!.stream).toBe('{"status":"disabled"}');
        expect(await store.updateReceiver('gone', { stream: '{}', ifStream: null }, {})).toBe(false);
      });
    });
  });
}
