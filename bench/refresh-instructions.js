#!/usr/bin/env node
/**
 * Instructions per refresh, counted by valgrind (callgrind, no cache simulation): deterministic
 * enough to compare two builds on a shared, noisy machine, where req/s and even CPU seconds move
 * by more than the change being measured. `perf stat -e instructions` would do the same, but a
 * virtual machine often has no hardware counters.
 *
 * Each round, `tokenctl serve` (the build under ROOT, default this tree) runs under callgrind on a
 * fresh copy of the store, with instrumentation off; a client outside valgrind sends WARMUP
 * refreshes over 50 keep-alive connections (each refresh token once, in the order of the token
 * file), so that start-up, the client's scrypt and most of V8's compiling are done; then
 * instrumentation is switched on (callgrind_control -i on), N more refreshes are sent, it is
 * switched off, and the server is stopped. The count divided by N is what one refresh costs the
 * server: HTTP, engine, store, commit and sync, every thread (the checkpoint thread included:
 * `per_refresh`), and the main thread alone (`main_thread_per_refresh`, the steadier figure: the
 * other threads' share depends on timers, which valgrind's slowness stretches).
 *
 * Usage: node bench/refresh-instructions.js --db STORE.db --tokens REFRESH.txt
 *          [--root DIR] [--warmup 4000] [--n 2000] [--rounds 1] [--serve-arg=--flag ...] [--keep DIR]
 *          [--kind refresh|revoke|introspect]
 * --keep DIR: keep the callgrind files there (callgrind_annotate shows where the instructions go).
 * STORE.db: a bench pool store (node bench/setup-store.js --access 250000 --refresh 20000).
 * Needs valgrind. Only 127.0.0.1 is ever targeted. Prints one JSON line per round.
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { REQUESTS } from './lib/contenders.js';
import { startServeUnderCallgrind } from './lib/callgrind.js';

const { values } = parseArgs({
  options: {
    db: { type: 'string' },
    tokens: { type: 'string' },
    root: { type: 'string', default: fileURLToPath(new URL('../', import.meta.url)) },
    warmup: { type: 'string', default: '4000' },
    n: { type: 'string', default: '2000' },
    rounds: { type: 'string', default: '1' },
    'serve-arg': { type: 'string', multiple: true, default: [] },
    keep: { type: 'string' },
    kind: { type: 'string', default: 'refresh' },
  },
});
if (!values.db || !values.tokens) {
  console.error('usage: node bench/refresh-instructions.js --db STORE.db --tokens REFRESH.txt [--root DIR] [--warmup 4000] [--n 2000] [--rounds 1]');
  process.exit(2);
}
const root = resolve(values.root);
const warmup = Number(values.warmup);
const n = Number(values.n);
const tokens = readFileSync(values.tokens, 'utf8').split('\n').filter(Boolean);
if (warmup + n > tokens.length) throw new Error(`only ${tokens.length} tokens in ${values.tokens}`);
/** `--kind revoke` (--tokens: access tokens, each revoked once) or `introspect`: the same count for the other loads. */
const kind = /** @type {'refresh'|'revoke'|'introspect'} */ (values.kind);
if (!['refresh', 'revoke', 'introspect'].includes(kind)) throw new Error(`--kind must be refresh, revoke or introspect, not ${kind}`);
const req = REQUESTS.tokenctl[kind];

/** Starts serve under callgrind on a copy of the store; resolves with its URL, instrument(on) and stop() → counts. */
async function startServe(dir, label) {
  const db = join(dir, `${label}.db`);
  copyFileSync(values.db, db);
  const serve = await startServeUnderCallgrind({ root, db, out: join(dir, `${label}.callgrind`), serveArgs: values['serve-arg'] });
  // Every thread's instructions, and the main thread's alone (the event loop, which bounds
  // throughput; the others are the WAL syncs, the checkpoint thread, V8's compiler and collector).
  const stop = async () => {
    const threads = await serve.stop();
    return { total: threads.reduce((a, t) => a + t.total, 0), main: threads[0].total };
  };
  return { url: serve.url, instrument: serve.instrument, stop };
}

/** Sends refreshes for tokens [from, to) over 50 keep-alive connections; every answer must be 200. */
async function drive(url, from, to) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 50 });
  const target = new URL(req.path, url);
  let next = from;
  let failed = 0;
  const one = (token) =>
    new Promise((ok, fail) => {
      const body = req.prefix + token + req.suffix;
      const r = http.request(target, { method: 'POST', agent, headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body), ...req.headers } }, (res) => {
        if (res.statusCode !== 200) failed++;
        res.resume();
        res.on('end', ok);
      });
      r.on('error', fail);
      r.end(body);
    });
  const lane = async () => {
    while (next < to) await one(tokens[next++]);
  };
  await Promise.all(Array.from({ length: 50 }, lane));
  agent.destroy();
  if (failed > 0) throw new Error(`${failed} of ${to - from} refreshes were not answered 200`);
}

const dir = values.keep ?? mkdtempSync(join(tmpdir(), 'tokenctl-instr-'));
try {
  for (let round = 0; round < Number(values.rounds); round++) {
    const serve = await startServe(dir, `r${round}`);
    await drive(serve.url, 0, warmup);
    serve.instrument(true);
    await drive(serve.url, warmup, warmup + n);
    serve.instrument(false);
    const { total, main } = await serve.stop();
    console.log(JSON.stringify({ root, kind, warmup, n, per_refresh: Math.round(total / n), main_thread_per_refresh: Math.round(main / n) }));
  }
} finally {
  if (values.keep === undefined) rmSync(dir, { recursive: true, force: true });
  else for (let r = 0; r < Number(values.rounds); r++) for (const suffix of ['', '-wal', '-shm']) rmSync(join(dir, `r${r}.db${suffix}`), { force: true });
}
