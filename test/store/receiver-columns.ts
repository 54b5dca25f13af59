import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import type { AuditEntry, TokenStore } from '../../src/store/store.js';
import { HOUR, T0, makeClient } from '../helpers/records.js';
import { makePushReceiver } from './events-contract.js';

/**
 * What the SQL stores keep of a receiver, on SQLite and PostgreSQL: a change of several fields
 * (`receiver update --events … --retention …`) made in one transaction with its audit line, or
 * not at all.
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
  });
}
