#!/usr/bin/env node
/**
 * CPU per refresh of the store's own work (insert a new refresh and access token, mark the old
 * refresh token replaced), 30 refreshes per transaction like a busy group commit, with the
 * server's pragmas, on a COPY of a store. Usage: node bench/micro/refresh-writes.js STORE.db [ROUNDS]
 * SYNC=OFF and CKPT=0 (no automatic checkpoint) show what durability and checkpoints cost.
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';

const [template, rounds = '300'] = process.argv.slice(2);
if (!template) {
  console.error('usage: node bench/micro/refresh-writes.js STORE.db [ROUNDS]');
  process.exit(2);
}
const dir = mkdtempSync(join(tmpdir(), 'tokenctl-micro-'));
const file = join(dir, 'copy.db');
copyFileSync(template, file);
const db = new Database(file);
db.pragma('journal_mode = WAL');
db.pragma(`synchronous = ${process.env.SYNC ?? 'FULL'}`);
db.pragma('cache_size = -16384');
db.pragma(`wal_autocheckpoint = ${process.env.CKPT ?? 10000}`);
db.pragma('journal_size_limit = 67108864');
const current = /** @type {{ jti: string, grant_id: string, client_id: string }[]} */ (
  db.prepare("SELECT jti, grant_id, client_id FROM tokens WHERE type = 'refresh_token' AND replaced_at IS NULL AND revoked_at IS NULL LIMIT 1000").all()
);
if (current.length === 0) throw new Error(`${template} holds no current refresh token`);
const insert = db.prepare(`INSERT INTO tokens (jti, digest, type, grant_id, client_id, username, sub, scope, audience, org_id, node, issued_at, not_before, expires_at)
  VALUES (?, ?, ?, ?, ?, 'alice', 'alice', 'read', 'api', 'org', 'micro', ?, ?, ?)`);
const replace = db.prepare('UPDATE tokens SET replaced_at = ?, replaced_by = ? WHERE jti = ?');
const digest = () => createHash('sha256').update(randomBytes(32)).digest('base64url');
const batch = db.transaction((/** @type {number} */ k) => {
  for (let i = 0; i < 30; i++) {
    const old = /** @type {typeof current[number]} */ (current[(k * 30 + i) % current.length]);
    const now = Date.now();
    const [access, refresh] = [randomUUID(), randomUUID()];
    insert.run(access, digest(), 'access_token', old.grant_id, old.client_id, now, now, now + 3_600_000);
    insert.run(refresh, digest(), 'refresh_token', old.grant_id, old.client_id, now, now, now + 86_400_000);
    replace.run(now, refresh, old.jti);
    old.jti = refresh;
  }
});
try {
  for (let k = 0; k < 50; k++) batch.immediate(k); // warm-up
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let k = 0; k < Number(rounds); k++) batch.immediate(k);
  const cpu = process.cpuUsage(cpu0);
  const n = Number(rounds) * 30;
  console.log(`${((performance.now() - t0) * 1000 / n).toFixed(1)} µs wall, ${((cpu.user + cpu.system) / n).toFixed(1)} µs CPU (system ${(cpu.system / n).toFixed(1)}) per refresh; synchronous=${process.env.SYNC ?? 'FULL'}, wal_autocheckpoint=${process.env.CKPT ?? 10000}`);
} finally {
  db.close();
  rmSync(dir, { recursive: true, force: true });
}
