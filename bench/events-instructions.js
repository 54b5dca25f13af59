#!/usr/bin/env node
/**
 * What security events cost a revocation, in instructions (bench/events.js's events_cost_ratio,
 * counted instead of timed): on this shared machine two timed runs of one build differ by up to
 * 15 %, more than the changes being compared; callgrind's count moves by well under 1 %.
 *
 * `tokenctl serve` (the build under --root) runs under callgrind on a fresh copy of the bench's
 * pool store, in these modes:
 *   off     no receiver;
 *   outbox  a poll receiver registered that nobody polls (the outbox rows alone);
 *   poll    a poll receiver registered (`tokenctl receiver add --poll`), and this script polling it
 *         (RFC 8936, acknowledging what it got) after every CHUNK revocations: each answer then
 *         carries what the bench's receiver gets per answer under load (~600 revocations; the
 *         server's 50 ms pace would give a few under valgrind's slowness).
 * A client outside valgrind revokes WARMUP access tokens (50 keep-alive connections), then
 * instrumentation goes on for N more (and their polls). Printed: instructions per revocation, every
 * thread and the main thread, and poll ÷ off as the throughput ratio those counts would give a
 * server bound by its one core. Caveat: valgrind's CPU has no SHA extensions, so SHA-256 (the
 * signature's hash over every SET byte) counts several times what it costs on this machine; the
 * line `sha256` says how much of the count it is.
 *
 * Usage: node bench/events-instructions.js [--root DIR] [--modes off,poll] (or off,outbox,poll) [--warmup 3000] [--n 6000] [--chunk 600]
 *          [--db STORE.db] [--keep DIR]
 * --db: a copy of this store instead of the pool store, its tokens in STORE-access.txt beside it
 * (another build's pool store in the bench's cache, for a build that cannot open this one's schema). --keep: keep the callgrind files there (one per thread).
 * Needs valgrind and the bench's pool store (prepared on first use, as by npm run bench).
 * Only 127.0.0.1 is ever targeted.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { CLIENT, REQUESTS } from './lib/contenders.js';
import { prepareStores } from './lib/stores.js';
import { runToEnd } from './lib/proc.js';
import { startServeUnderCallgrind } from './lib/callgrind.js';

const { values } = parseArgs({
  options: {
    root: { type: 'string', default: fileURLToPath(new URL('../', import.meta.url)) },
    modes: { type: 'string', default: 'off,poll' },
    warmup: { type: 'string', default: '3000' },
    n: { type: 'string', default: '6000' },
    chunk: { type: 'string', default: '600' },
    db: { type: 'string' },
    keep: { type: 'string' },
  },
});
const root = resolve(values.root);
const warmup = Number(values.warmup);
const n = Number(values.n);
const chunk = Number(values.chunk);
const req = REQUESTS.tokenctl.revoke;
const BASIC = 'Basic ' + Buffer.from(`${CLIENT.id}:${CLIENT.secret}`).toString('base64');

const stores = await prepareStores({ quick: false, rebuild: false, log: () => undefined });
// A store given with --db comes with its tokens, as the bench's cache keeps them (STORE-access.txt).
const tokenFile = values.db ? values.db.replace(/\.db$/, '-access.txt') : stores.pool.accessFile;
const tokens = readFileSync(tokenFile, 'utf8').split('\n').filter(Boolean);
if (warmup + n > tokens.length) throw new Error(`only ${tokens.length} tokens in the pool`);

/** Starts serve under callgrind on `db`; resolves with its URL, instrument(on) and stop() → counts. */
async function startServe(dir, label, db) {
  const serve = await startServeUnderCallgrind({ root, db, out: join(dir, `${label}.callgrind`) });
  return { url: serve.url, instrument: serve.instrument, stop: async () => counts(await serve.stop()) };
}

/** Every thread's instructions, the main thread's, and SHA-256's share (callgrind_annotate of each thread's file). */
function counts(/** @type {{ file: string, total: number }[]} */ threads) {
  let sha = 0;
  for (const t of threads) {
    const annotated = execFileSync('callgrind_annotate', ['--threshold=100', t.file], { encoding: 'utf8', maxBuffer: 64 << 20 });
    for (const line of annotated.split('\n')) if (/sha256_block/.test(line)) sha += Number(line.trim().split(/\s/)[0]?.replace(/,/g, '') ?? 0);
  }
  const each = threads.map((t) => t.total);
  return { total: each.reduce((a, b) => a + b, 0), main: each[0], sha, threads: each };
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 50 });

function post(url, path, body, headers) {
  return new Promise((ok, fail) => {
    const r = http.request(new URL(path, url), { method: 'POST', agent, headers: { 'content-length': Buffer.byteLength(body), ...headers } }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d) => (text += d));
      res.on('end', () => (res.statusCode === 200 ? ok(text) : fail(new Error(`${path}: HTTP ${res.statusCode} ${text.slice(0, 200)}`))));
    });
    r.on('error', fail);
    r.end(body);
  });
}

/** Revokes tokens [from, to) over 50 connections. */
async function revoke(url, from, to) {
  let next = from;
  const lane = async () => {
    while (next < to) await post(url, req.path, req.prefix + tokens[next++] + req.suffix, { 'content-type': 'application/x-www-form-urlencoded', ...req.headers });
  };
  await Promise.all(Array.from({ length: 50 }, lane));
}

/** One poll acknowledging `ack`; returns the jtis it got and the revocations they carry. */
async function poll(url, ack) {
  const answer = JSON.parse(await post(url, '/events/poll', JSON.stringify({ ack, maxEvents: 1000, returnImmediately: true }), { authorization: BASIC, 'content-type': 'application/json' }));
  const jtis = Object.keys(answer.sets);
  let revocations = 0;
  for (const set of Object.values(answer.sets)) revocations += JSON.parse(Buffer.from(String(set).split('.')[1], 'base64url').toString()).events['urn:tokenctl:secevent:tokens-revoked'].revocations.length;
  return { jtis, revocations };
}

/** Revokes [from, to), polling after every `chunk` when `polling`. */
async function run(url, from, to, polling, state) {
  for (let at = from; at < to; at += chunk) {
    await revoke(url, at, Math.min(to, at + chunk));
    if (polling) {
      const got = await poll(url, state.ack);
      state.ack = got.jtis;
      state.revocations += got.revocations;
    }
  }
}

const dir = values.keep ?? mkdtempSync(join(tmpdir(), 'tokenctl-events-instr-'));
const results = {};
try {
  for (const mode of String(values.modes).split(',')) {
    if (!['off', 'outbox', 'poll'].includes(mode)) throw new Error(`unknown mode ${mode}: off, outbox or poll`);
    const db = join(dir, `${mode}.db`);
    copyFileSync(values.db ?? stores.pool.db, db);
    if (mode === 'poll' || mode === 'outbox') {
      const r = await runToEnd(process.execPath, [join(root, 'bin/run.js'), 'receiver', 'add', 'rs', '--poll', '--client', CLIENT.id, '--audience', 'rs', '--db', db, '--json'], { timeoutMs: 60_000 });
      if (r.code !== 0) throw new Error(`receiver add failed: ${(r.stderr || r.stdout).trim()}`);
    }
    const serve = await startServe(dir, mode, db);
    const state = { ack: [], revocations: 0 };
    await run(serve.url, 0, warmup, mode === 'poll', state);
    state.revocations = 0;
    serve.instrument(true);
    await run(serve.url, warmup, warmup + n, mode === 'poll', state);
    serve.instrument(false);
    const c = await serve.stop();
    results[mode] = c;
    console.log(JSON.stringify({ root, mode, n, per_revocation: Math.round(c.total / n), main_thread_per_revocation: Math.round(c.main / n), sha256_per_revocation: Math.round(c.sha / n), threads_per_revocation: c.threads.map((t) => Math.round(t / n)), ...(mode === 'poll' ? { revocations_polled: state.revocations } : {}) }));
  }
  if (results.off && results.poll) {
    const ratio = (a, b) => (a / b).toFixed(3);
    console.log(`poll ÷ off as a throughput ratio (off ÷ poll instructions): every thread ${ratio(results.off.total, results.poll.total)}, main thread ${ratio(results.off.main, results.poll.main)}, every thread without SHA-256 ${ratio(results.off.total - results.off.sha, results.poll.total - results.poll.sha)}`);
  }
} finally {
  agent.destroy();
  if (values.keep === undefined) rmSync(dir, { recursive: true, force: true });
  else for (const f of readdirSync(dir)) if (/\.db(-wal|-shm)?$/.test(f)) rmSync(join(dir, f), { force: true });
}
