import { describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { tempStore, type TempStore } from '../helpers/cli.js';
import { startServe, stopServe } from '../helpers/load.js';

/** What `tokenctl serve` does at start with the signing keys the receiver commands manage (the built binary). */
describe('serve and the signing keys', () => {
  /** A store of its own whose one signing key is 91 days old (serve rotates it at start); `sql` runs on it too. */
  async function storeWithOldKey(sql = ''): Promise<{ own: TempStore; made: { kid: string } }> {
    const own = tempStore({ inProcess: true });
    const made = await own.json<{ kid: string }>(['signing-key', 'rotate']);
    const raw = new Database(own.db);
    raw.prepare('UPDATE signing_keys SET created_at = created_at - ?').run(91 * 86_400_000);
    if (sql) raw.exec(sql);
    raw.close();
    return { own, made };
  }

  it('serve rotates a 90-day-old key by itself, and the audit log says which node did', async () => {
    const { own, made } = await storeWithOldKey();
    try {
      const serve = await startServe(['--db', own.db, '--node', 'node-a', '--log-level', 'warn']);
      await stopServe(serve);
      const all = await own.json<{ kid: string; alg: string; current: boolean }[]>(['signing-key', 'list']);
      // serve makes the first RS256 key too (not a rotation: no audit line).
      expect(all.filter((k) => k.alg === 'RS256').map((k) => k.current)).toEqual([true]);
      const keys = all.filter((k) => k.alg === 'ES256');
      expect(keys.map((k) => k.current)).toEqual([true, false]);
      expect(keys[1]!.kid).toBe(made.kid);
      const { entries: audit } = await own.json<{ entries: { action: string; actor: string; target: string }[] }>(['audit']);
      expect(audit.filter((e) => e.action === 'signing_key.rotate').map((e) => [e.actor, e.target])).toEqual([
        ['serve:node-a', `key:${keys[0]!.kid}`],
        [expect.stringMatching(/^cli:/), `key:${made.kid}`],
      ]);
    } finally {
      own.cleanup();
    }
  });

  it('serve that cannot rotate its 90-day-old key says once that the old key signs on, and keeps it current', async () => {
    // The rotation commits with its audit line: an audit table that refuses every insert refuses it.
    const { own, made } = await storeWithOldKey("CREATE TRIGGER refuse_audit BEFORE INSERT ON audit BEGIN SELECT RAISE(ABORT, 'audit refused by test'); END");
    try {
      const serve = await startServe(['--db', own.db, '--node', 'node-a', '--log-level', 'warn']);
      // The deliverer's first rounds (every 100 ms) run meanwhile: they must not try and log it again.
      await new Promise((r) => setTimeout(r, 1_000));
      await stopServe(serve);
      const lines = serve.stderr().split('\n').filter((l) => l.includes('refused by test'));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain('the signing key is 90 days old and could not be rotated; SETs are signed with it meanwhile');
      expect(lines[0]).toContain(`could not rotate signing key ${made.kid} (90 days old): audit refused by test`);
      const keys = await own.json<{ kid: string; alg: string; current: boolean }[]>(['signing-key', 'list']);
      expect(keys.filter((k) => k.alg === 'ES256').map((k) => [k.kid, k.current])).toEqual([[made.kid, true]]);
    } finally {
      own.cleanup();
    }
  });
});
