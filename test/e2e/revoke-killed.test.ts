import { spawn } from 'node:child_process';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { BIN, createClient, sleep, tempStore, type TempStore } from '../helpers/cli.js';
import { makeToken } from '../helpers/records.js';

const TOTAL = 20_000;
const BATCH = 100;
const DAY = 86_400_000;

/** How far the revocation got: its batches' audit lines, and the tokens of `clientId` revoked. */
function progress(file: string, clientId: string): { batches: number; revoked: number } {
  const db = new Database(file, { readonly: true });
  try {
    const batches = (db.prepare("SELECT count(*) AS n FROM audit WHERE action = 'token.revoke_bulk.batch' AND count > 0").get() as { n: number }).n;
    const revoked = (db.prepare('SELECT count(*) AS n FROM tokens WHERE client_id = ? AND revoked_at IS NOT NULL').get(clientId) as { n: number }).n;
    return { batches, revoked };
  } finally {
    db.close();
  }
}

/**
 * `tokenctl revoke --client X --yes` killed (SIGKILL: no handler runs) part way over many
 * tokens: the receivers have been told, by the event its first batch committed with it.
 */
describe('a bulk revocation killed part way', () => {
  let store: TempStore;
  let client: string;
  beforeEach(async () => {
    store = tempStore();
    client = (await createClient(store)).id;
    const rs = await createClient(store, ['--secret', 'receiver-secret-1234']);
    const added = await store.run(['receiver', 'add', 'rs', '--poll', '--client', rs.id]);
    expect(added.code, added.stderr).toBe(0);
    const db = await SqliteStore.open(store.db, { create: false });
    try {
      const expiresAt = Date.now() + DAY;
      for (let i = 0; i < TOTAL; i += 5000) await db.insertTokens(Array.from({ length: 5000 }, () => makeToken({ clientId: client, expiresAt })));
    } finally {
      await db.close();
    }
  });
  afterEach(() => store.cleanup());

  it('SIGKILL after its first batch: the tokens it revoked are told in the outbox, one event a committed batch', async () => {
    const child = spawn(process.execPath, [BIN, 'revoke', '--client', client, '--yes', '--batch-size', String(BATCH), '--json', '--db', store.db], { stdio: 'ignore' });
    const exited = new Promise<NodeJS.Signals | null>((r) => child.on('close', (_code, signal) => r(signal)));
    const deadline = Date.now() + 20_000;
    while (progress(store.db, client).batches === 0) {
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error('revoke did not commit a batch within 20 s');
      }
      await sleep(5);
    }
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
    const { batches, revoked } = progress(store.db, client);
    expect(revoked).toBeGreaterThan(0);
    expect(revoked).toBeLessThan(TOTAL); // killed part way, not after the end
    const db = await SqliteStore.open(store.db, { create: false });
    try {
      const events = (await db.pendingDeliveries('rs', 1000)).flatMap((d) => d.events);
      expect(events.length).toBeGreaterThan(0);
      // Every batch that committed committed its event: as many events as batch audit lines.
      expect(events).toHaveLength(batches);
      for (const e of events) expect(e).toMatchObject({ scope: 'client', clientId: client, reason: 'revoked' });
    } finally {
      await db.close();
    }
  });
});
