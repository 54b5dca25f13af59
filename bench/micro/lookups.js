#!/usr/bin/env node
/**
 * CPU per token lookup by digest, as `serve` does it (the same SELECT, raw rows), below the HTTP
 * layer. Usage: node bench/micro/lookups.js STORE.db TOKENS.txt [CACHE_KIB]
 * (the bench's template stores and token files are in $TMPDIR/tokenctl-bench-cache/<hash>/).
 * Opens the store read-only; changes nothing.
 */
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { createHash } from 'node:crypto';
import Database from 'better-sqlite3';

const [file, tokenFile, cacheKib = '16384'] = process.argv.slice(2);
if (!file || !tokenFile) {
  console.error('usage: node bench/micro/lookups.js STORE.db TOKENS.txt [CACHE_KIB]');
  process.exit(2);
}
const db = new Database(file, { readonly: true, fileMustExist: true });
db.pragma(`cache_size = -${Number(cacheKib)}`);
const digests = readFileSync(tokenFile, 'utf8').split('\n').filter(Boolean).map((t) => createHash('sha256').update(t).digest('base64url'));
const byDigest = db.prepare('SELECT * FROM tokens WHERE digest = ?').raw(true);
const N = 200_000;
for (let i = 0; i < Math.min(100_000, digests.length * 2); i++) byDigest.get(digests[i % digests.length]); // warm-up
const cpu0 = process.cpuUsage();
const t0 = performance.now();
let found = 0;
for (let i = 0; i < N; i++) if (byDigest.get(digests[(i * 7919) % digests.length])) found++;
const cpu = process.cpuUsage(cpu0);
const wall = performance.now() - t0;
console.log(`${file}: ${((wall * 1000) / N).toFixed(2)} µs wall, ${((cpu.user + cpu.system) / N).toFixed(2)} µs CPU (system ${(cpu.system / N).toFixed(2)}) per lookup, cache ${cacheKib} KiB; ${found}/${N} found`);
db.close();
