import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { prepareStatements } from '../../src/store/sqlite/statements.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { makeClient, makeGrant, makeToken, MINUTE, T0 } from '../helpers/records.js';

/**
 * The mint step runs without a savepoint of its own (group-commit.ts, `atomic`): a mint that
 * fails must still fail alone, in a batch whose other steps commit, and leave nothing behind.
 */
describe('SqliteStore mint without a savepoint', () => {
  let dir: string;
  let file: string;
  let store: SqliteStore;
  let commits: number[];
  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tokenctl-mint-'));
    file = path.join(dir, 'tokens.db');
    commits = [];
    store = await SqliteStore.open(file, { observer: { commitBatch: (size: number) => commits.push(size) } });
    await store.createClient(makeClient({ id: 'client-1' }), {});
  });
  afterEach(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a mint whose insert fails (a duplicate digest) fails alone; the mints and writes beside it commit', async () => {
    const g = makeGrant({ clientId: 'client-1' });
    const other = makeGrant({ clientId: 'client-1' });
    await store.insertTokens([g.refresh, g.access, other.refresh]);
    commits.length = 0;
    const first = makeToken({ grantId: g.refresh.grantId, issuedAt: T0 + 1 });
    const duplicate = makeToken({ grantId: g.refresh.grantId, issuedAt: T0 + 2, digest: g.access.digest });
    const third = makeToken({ grantId: other.refresh.grantId, issuedAt: T0 + 3 });
    // Queued in one turn: one group commit.
    const outcomes = await Promise.allSettled([
      store.insertMintedAccess(first, g.refresh.jti, { since: T0 - MINUTE, max: 10 }),
      store.insertMintedAccess(duplicate, g.refresh.jti, { since: T0 - MINUTE, max: 10 }),
      store.revokeToken(other.refresh.jti, T0 + 4, false, {}),
      store.insertMintedAccess(third, other.refresh.jti),
    ]);
    expect(commits).toEqual([4]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value : 'failed'))).toEqual(['inserted', 'failed', true, 'revoked']);
    expect(await store.findTokenByJti(first.jti)).toMatchObject({ jti: first.jti, digest: first.digest });
    expect(await store.findTokenByJti(duplicate.jti)).toBeNull();
    expect(await store.findTokenByJti(third.jti)).toBeNull();
    expect((await store.findTokenByJti(other.refresh.jti))?.revokedAt).toBe(T0 + 4);
    // The failed statement left nothing half-written: the digest still names the original token.
    expect((await store.findTokenByDigest(g.access.digest))?.jti).toBe(g.access.jti);
    expect(await store.countTokens({ clientId: 'client-1' })).toBe(4);
  });

  it("reads the refresh token's state by its key and counts the grant's recent tokens from the grant index alone", () => {
    const db = new Database(file, { readonly: true });
    try {
      const { mintState } = prepareStatements(db);
      const plan = (db.prepare(`EXPLAIN QUERY PLAN ${mintState.source}`).all(T0, 10, 'j') as { detail: string }[]).map((r) => r.detail).join(' | ');
      expect(plan).not.toMatch(/SCAN (t|g|tokens)\b/);
      expect(plan).toMatch(/SEARCH t USING INDEX sqlite_autoindex_tokens_1 \(jti=\?\)/);
      expect(plan).toMatch(/SEARCH g USING COVERING INDEX tokens_grant \(grant_id=\? AND issued_at>\?\)/);
    } finally {
      db.close();
    }
  });
});
