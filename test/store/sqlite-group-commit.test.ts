import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GroupCommit } from '../../src/store/sqlite/group-commit.js';
import { ReadBatcher } from '../../src/store/sqlite/read-batcher.js';

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('GroupCommit', () => {
  let db: Database.Database;
  let insert: Database.Statement;
  beforeEach(() => {
    db = new Database(':memory:');
    db.exec('CREATE TABLE t (k TEXT PRIMARY KEY)');
    insert = db.prepare('INSERT INTO t (k) VALUES (?)');
  });
  afterEach(() => db.close());
  const rows = () => (db.prepare('SELECT k FROM t ORDER BY k').all() as { k: string }[]).map((r) => r.k);

  it('tells its observer the size of each commit', async () => {
    const sizes: number[] = [];
    const writes = new GroupCommit(db, (e) => e, { commitBatch: (n) => sizes.push(n) });
    await Promise.all(['a', 'b', 'c'].map((k) => writes.run(() => insert.run(k))));
    await writes.run(() => insert.run('d'));
    // A failing step is still part of its batch's commit (it rolls back alone).
    const outcomes = await Promise.allSettled([writes.run(() => insert.run('e')), writes.run(() => insert.run('a'))]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected']);
    expect(sizes).toEqual([3, 1, 2]);
    expect(rows()).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('with a deferred sync, acknowledges a commit only once a sync started after it has completed', async () => {
    const syncs: ((error: unknown) => void)[] = [];
    const writes = new GroupCommit(db, (e) => e, undefined, (done) => syncs.push(done));
    const acked: string[] = [];
    const write = (k: string) => writes.run(() => insert.run(k)).then(() => acked.push(k));
    const first = write('a');
    await tick();
    expect(rows()).toEqual(['a']); // committed…
    expect(syncs).toHaveLength(1);
    expect(acked).toEqual([]); // …but not acknowledged before its sync completes
    // Two more batches commit while that sync is in flight: they wait for the next one.
    const more = [write('b'), write('c')];
    await tick();
    const last = write('d');
    await tick();
    expect(rows()).toEqual(['a', 'b', 'c', 'd']);
    expect(syncs).toHaveLength(1); // one sync in flight at a time
    syncs[0]!(undefined);
    await first;
    expect(acked).toEqual(['a']);
    expect(syncs).toHaveLength(2);
    const settled = writes.synced();
    syncs[1]!(undefined);
    await Promise.all([...more, last, settled]);
    expect(acked).toEqual(['a', 'b', 'c', 'd']);
    expect(syncs).toHaveLength(2); // b, c and d shared the second
  });

  it('a failed sync rejects every write it covered; the next ones are acknowledged after their own', async () => {
    const syncs: ((error: unknown) => void)[] = [];
    const writes = new GroupCommit(db, (e) => new Error(`mapped: ${(e as Error).message}`), undefined, (done) => syncs.push(done));
    const lost = Promise.allSettled([writes.run(() => insert.run('a')), writes.run(() => insert.run('b'))]);
    await tick();
    syncs[0]!(new Error('EIO'));
    expect((await lost).map((o) => (o.status === 'rejected' ? (o.reason as Error).message : 'fulfilled'))).toEqual(['mapped: EIO', 'mapped: EIO']);
    const next = writes.run(() => insert.run('c'));
    await tick();
    syncs[1]!(undefined);
    await expect(next).resolves.toBeDefined();
  });
});

describe('ReadBatcher', () => {
  it('answers the reads of one turn with one call, in order, and a failure rejects them all', async () => {
    const calls: number[][] = [];
    let fail = false;
    const reads = new ReadBatcher<number, string>(
      (qs) => {
        calls.push(qs);
        if (fail) throw new Error('disk');
        return qs.map((q) => `answer ${q}`);
      },
      (e) => new Error(`mapped: ${(e as Error).message}`),
    );
    expect(await Promise.all([1, 2, 3].map((q) => reads.read(q)))).toEqual(['answer 1', 'answer 2', 'answer 3']);
    expect(await reads.read(4)).toBe('answer 4');
    expect(calls).toEqual([[1, 2, 3], [4]]);
    fail = true;
    const failed = await Promise.allSettled([reads.read(5), reads.read(6)]);
    expect(failed.map((o) => o.status === 'rejected' && (o.reason as Error).message)).toEqual(['mapped: disk', 'mapped: disk']);
  });

  it('flush() answers what is queued at once', async () => {
    const reads = new ReadBatcher<number, number>((qs) => qs.map((q) => q * 2), (e) => e);
    const pending = reads.read(21);
    reads.flush();
    expect(await Promise.race([pending, Promise.resolve('not yet')])).toBe(42);
  });
});
