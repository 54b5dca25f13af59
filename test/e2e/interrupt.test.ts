import { spawn } from 'node:child_process';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { BIN, createClient, hasScript, sleep, stripAnsi, tempStore, tokenctlInTerminal, type TempStore } from '../helpers/cli.js';
import { makeToken, T0 } from '../helpers/records.js';

const TOTAL = 30_000;

/** A store whose client holds TOTAL tokens that expired long ago. */
async function storeWithExpired(): Promise<TempStore> {
  const store = tempStore();
  const { id } = await createClient(store);
  const db = await SqliteStore.open(store.db, { create: false });
  try {
    for (let i = 0; i < TOTAL; i += 5000) {
      await db.insertTokens(Array.from({ length: 5000 }, () => makeToken({ clientId: id, issuedAt: T0, notBefore: T0, expiresAt: T0 + 1000 })));
    }
  } finally {
    await db.close();
  }
  return store;
}

function trail(file: string): { purged: number; batches: number; interrupted: { count: number; detail: string } | undefined; left: number } {
  const db = new Database(file, { readonly: true });
  try {
    const purge = db.prepare("SELECT coalesce(sum(count), 0) AS n, count(*) AS batches FROM audit WHERE action = 'purge.batch'").get() as { n: number; batches: number };
    const interrupted = db.prepare("SELECT count, detail FROM audit WHERE action = 'purge.interrupted'").get() as { count: number; detail: string } | undefined;
    const left = (db.prepare('SELECT count(*) AS n FROM tokens').get() as { n: number }).n;
    return { purged: purge.n, batches: purge.batches, interrupted, left };
  } finally {
    db.close();
  }
}

/**
 * Runs `tokenctl ARGS` without a terminal, waits until `started()` says its first batch is
 * committed (its audit line is in the trail), then sends SIGTERM; its exit code and stdout.
 */
async function sigtermAfterFirstBatch(args: string[], started: () => boolean): Promise<{ code: number | null; stdout: string }> {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } });
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
  const deadline = Date.now() + 20_000;
  while (!started()) {
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`tokenctl ${args[0]} did not start within 20 s`);
    }
    await sleep(10);
  }
  child.kill('SIGTERM');
  return { code: await exited, stdout };
}

/**
 * Ctrl-C or SIGTERM during purge: it stops at a batch boundary, prints and audits exactly what
 * was done, and exits 130.
 */
describe('interrupting a purge', () => {
  let store: TempStore;
  beforeEach(async () => {
    store = await storeWithExpired();
  });
  afterEach(() => store.cleanup());

  it.skipIf(!hasScript())('Ctrl-C at a terminal: "Purge interrupted: N of 30,000 deleted", exit 130, the trail says N', async () => {
    const run = await tokenctlInTerminal(['purge', '--yes', '--batch-size', '50', '--db', store.db], {
      answers: [{ when: /\d+\/30000 deleted/, send: '\x03' }],
      timeoutMs: 60_000,
    });
    const output = stripAnsi(run.output);
    expect(run.code, output).toBe(130);
    const m = /Purge interrupted: ([\d,]+) of 30,000 deleted/.exec(output);
    expect(m, output).not.toBeNull();
    const deleted = Number(m![1]!.replace(/,/g, ''));
    expect(deleted).toBeGreaterThan(0);
    expect(deleted).toBeLessThan(TOTAL);
    expect(deleted % 50).toBe(0); // a batch boundary
    const t = trail(store.db);
    expect(t.left).toBe(TOTAL - deleted);
    expect(t.purged).toBe(deleted);
    expect(t.interrupted).toEqual({ count: deleted, detail: `interrupted: ${deleted} of ${TOTAL} deleted` });
  });

  it('SIGTERM without a terminal: the same, in --json', async () => {
    const { code, stdout } = await sigtermAfterFirstBatch(['purge', '--yes', '--batch-size', '50', '--json', '--db', store.db], () => trail(store.db).batches > 0);
    expect(code).toBe(130);
    const result = JSON.parse(stdout) as { deleted: number; purgeable: number; interrupted: boolean };
    expect(result).toMatchObject({ purgeable: TOTAL, interrupted: true });
    expect(result.deleted).toBeLessThan(TOTAL);
    const t = trail(store.db);
    expect(t.left).toBe(TOTAL - result.deleted);
    expect(t.purged).toBe(result.deleted);
    expect(t.interrupted?.count).toBe(result.deleted);
  });
});

describe('interrupting a migration', () => {
  let store: TempStore;
  beforeEach(async () => {
    store = await storeWithExpired();
  });
  afterEach(() => store.cleanup());

  it('SIGTERM: stops between batches, says how far it got, audits it in the target, exit 130; --merge finishes it', async () => {
    const target = `${store.dir}/target.db`;
    const args = ['migrate', '--from', store.db, '--to', target, '--yes', '--batch-size', '100'];
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
    const copied = () => {
      try {
        const db = new Database(target, { readonly: true, fileMustExist: true });
        try {
          return (db.prepare('SELECT count(*) AS n FROM tokens').get() as { n: number }).n;
        } finally {
          db.close();
        }
      } catch {
        return 0;
      }
    };
    const deadline = Date.now() + 20_000;
    while (copied() === 0) {
      if (Date.now() > deadline) throw new Error('the migration did not start');
      await sleep(10);
    }
    child.kill('SIGTERM');
    expect(await exited).toBe(130);
    const m = /Migration interrupted: ([\d,]+) of 30,000 tokens handled, ([\d,]+) copied/.exec(stdout);
    expect(m, stdout).not.toBeNull();
    const n = Number(m![2]!.replace(/,/g, ''));
    expect(n).toBeLessThan(TOTAL);
    expect(copied()).toBe(n);
    const db = new Database(target, { readonly: true });
    const line = db.prepare("SELECT count, detail FROM audit WHERE action = 'store.migrate.interrupted'").get() as { count: number; detail: string };
    db.close();
    expect(line.detail).toContain(`${n} of ${TOTAL} tokens copied`);
    expect(stdout).toContain('--merge');

    const finish = spawn(process.execPath, [BIN, ...args, '--merge', '--json'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    finish.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    expect(await new Promise((r) => finish.on('close', r))).toBe(0);
    expect(JSON.parse(out).tokens).toMatchObject({ source: TOTAL, copied: TOTAL - n, already_present: n });
  });
});

describe('interrupting a bulk revocation', () => {
  let store: TempStore;
  let clientId: string;
  beforeEach(async () => {
    store = tempStore();
    ({ id: clientId } = await createClient(store));
    const db = await SqliteStore.open(store.db, { create: false });
    try {
      for (let i = 0; i < TOTAL; i += 5000) {
        await db.insertTokens(Array.from({ length: 5000 }, () => makeToken({ clientId, issuedAt: Date.now(), notBefore: Date.now(), expiresAt: Date.now() + 3_600_000 })));
      }
    } finally {
      await db.close();
    }
  });
  afterEach(() => store.cleanup());

  const revokedByTrail = (file: string) => {
    const db = new Database(file, { readonly: true });
    try {
      const batches = db.prepare("SELECT coalesce(sum(count), 0) AS n, count(*) AS k FROM audit WHERE action = 'token.revoke_bulk.batch'").get() as { n: number; k: number };
      const revoked = (db.prepare('SELECT count(*) AS n FROM tokens WHERE revoked_at IS NOT NULL').get() as { n: number }).n;
      const interrupted = db.prepare("SELECT count FROM audit WHERE action = 'token.revoke_bulk_interrupted'").get() as { count: number } | undefined;
      return { audited: batches.n, batches: batches.k, revoked, interrupted };
    } finally {
      db.close();
    }
  };

  it('SIGTERM: stops between batches, says how many were revoked, the trail says the same, exit 130; a second run revokes the rest', async () => {
    const args = ['revoke', '--client', clientId, '--yes', '--batch-size', '50', '--json', '--db', store.db];
    const { code, stdout } = await sigtermAfterFirstBatch(args, () => revokedByTrail(store.db).batches > 0);
    expect(code).toBe(130);
    const result = JSON.parse(stdout) as { revoked: number; matched: number; interrupted: boolean };
    expect(result).toMatchObject({ matched: TOTAL, interrupted: true });
    expect(result.revoked).toBeGreaterThan(0);
    expect(result.revoked).toBeLessThan(TOTAL);
    expect(result.revoked % 50).toBe(0); // whole batches
    const t = revokedByTrail(store.db);
    expect(t.revoked).toBe(result.revoked);
    expect(t.audited).toBe(result.revoked);
    expect(t.interrupted?.count).toBe(result.revoked);

    const rest = await store.run(['revoke', '--client', clientId, '--yes', '--json']);
    expect(rest.code, rest.stderr).toBe(0);
    expect(rest.json()).toMatchObject({ revoked: TOTAL - result.revoked });
  });
});
