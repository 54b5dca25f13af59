/**
 * The load generator, run as its own process (pinned to the load core by bench/run.js): drives
 * one server with autocannon for a warm-up and then a measured run, rotating tokens across
 * requests from one counter shared by all connections, so that every request of a "fresh" run carries a token no
 * earlier request used.
 *
 * Usage: node bench/lib/load-worker.js <config.json>
 * Prints `measure-start` and `measure-end` lines around the measured run (bench/run.js samples
 * the server's CPU and memory between them), then `result <JSON>`.
 *
 * Config: { url, path, connections, warmupS, durationS, headers, prefix, suffix, tokenFile,
 *           start, fresh, dpop }  — each request's body is prefix + token + suffix; with `fresh` the
 *           tokens from `start` on are used once each and the run stops early if they run out.
 *           With `dpop`, every request carries a DPoP proof of its own (RFC 9449: a new jti and
 *           the current iat, signed ES256 by one key of the generator), built as it is sent.
 */
// @ts-expect-error: autocannon ships no type declarations
import autocannon from 'autocannon';
import { generateKeyPairSync, randomUUID, sign } from 'node:crypto';
import { readFileSync } from 'node:fs';

/** @type {{ url: string, path: string, connections: number, warmupS: number, durationS: number,
 *   headers: Record<string,string>, prefix: string, suffix: string, tokenFile: string,
 *   start?: number, fresh?: boolean, dpop?: boolean }} */
const cfg = JSON.parse(readFileSync(/** @type {string} */ (process.argv[2]), 'utf8'));
const target = new URL(cfg.url);
if (target.hostname !== '127.0.0.1') throw new Error(`refusing to load ${target.hostname}: only 127.0.0.1 is ever targeted`);

const tokens = readFileSync(cfg.tokenFile, 'utf8').split('\n').filter(Boolean);
if (tokens.length === 0) throw new Error(`no tokens in ${cfg.tokenFile}`);
let next = cfg.start ?? 0;
let exhausted = false;
/** @type {any} */
let current = null;

const headerLines = Object.entries({ 'content-type': 'application/x-www-form-urlencoded', ...cfg.headers })
  .map(([k, v]) => `${k}: ${v}\r\n`)
  .join('');
/**
 * Every request prebuilt once, so that the generator spends the same few instructions per
 * request whatever the contender (autocannon's `setupRequest` rebuilds the whole request each
 * time and halves what one core can send). The same bytes autocannon's builder would write.
 */
const pool = tokens.map((token) => {
  const body = Buffer.from(cfg.prefix + token + cfg.suffix, 'utf8');
  const head = `POST ${cfg.path} HTTP/1.1\r\nHost: ${target.host}\r\nConnection: keep-alive\r\n${headerLines}Content-Length: ${body.length}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
});

/** A DPoP proof (RFC 9449 §4.2) for the request path, signed now: ES256 by node:crypto, synchronously. */
const dpopKey = cfg.dpop ? generateKeyPairSync('ec', { namedCurve: 'P-256' }) : null;
const dpopHeader = dpopKey && Buffer.from(JSON.stringify({ typ: 'dpop+jwt', alg: 'ES256', jwk: dpopKey.publicKey.export({ format: 'jwk' }) })).toString('base64url');
const htu = target.origin + cfg.path;
function proof() {
  const claims = Buffer.from(JSON.stringify({ jti: randomUUID(), htm: 'POST', htu, iat: Math.floor(Date.now() / 1000) })).toString('base64url');
  const input = `${dpopHeader}.${claims}`;
  const signature = sign('sha256', Buffer.from(input), { key: /** @type {any} */ (dpopKey).privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url');
  return `${input}.${signature}`;
}

/** The next request with a proof of its own: the prebuilt one, its head rebuilt with the header. */
function withProof(/** @type {Buffer} */ prebuilt) {
  const split = prebuilt.indexOf('\r\n\r\n');
  return Buffer.concat([prebuilt.subarray(0, split), Buffer.from(`\r\nDPoP: ${proof()}`, 'latin1'), prebuilt.subarray(split)]);
}

/** The buffer for the next request: a shared counter, so that no two connections repeat a token. */
function nextBuffer() {
  if (cfg.dpop) return withProof(pickBuffer());
  return pickBuffer();
}

function pickBuffer() {
  if (!cfg.fresh) return /** @type {Buffer} */ (pool[next++ % pool.length]);
  if (next < pool.length) return /** @type {Buffer} */ (pool[next++]);
  if (!exhausted) {
    exhausted = true;
    setImmediate(() => current?.stop());
  }
  return /** @type {Buffer} */ (pool[pool.length - 1]);
}

/** @param {number} seconds */
function run(seconds) {
  return new Promise((resolve, reject) => {
    current = autocannon(
      {
        url: target.origin,
        connections: cfg.connections,
        duration: seconds,
        pipelining: 1,
        timeout: 10,
        method: 'POST',
        path: cfg.path,
        // autocannon's documented per-connection hook; its request buffer is swapped for ours.
        setupClient(/** @type {any} */ client) {
          client.getRequestBuffer = nextBuffer;
        },
      },
      (/** @type {Error|null} */ err, /** @type {any} */ result) => (err ? reject(err) : resolve(result)),
    );
  });
}

if (cfg.warmupS > 0) await run(cfg.warmupS);
if (exhausted) throw new Error(`token pool exhausted during warm-up (${tokens.length} tokens)`);
const usedBefore = next;
process.stdout.write('measure-start\n');
const cpu0 = process.cpuUsage();
const t0 = process.hrtime.bigint();
/** @type {any} */
const r = await run(cfg.durationS);
const wallS = Number(process.hrtime.bigint() - t0) / 1e9;
const cpu = process.cpuUsage(cpu0);
process.stdout.write('measure-end\n');

const seconds = wallS;
const out = {
  rps: r['2xx'] / seconds,
  ok: r['2xx'],
  non2xx: r.non2xx,
  errors: r.errors,
  timeouts: r.timeouts,
  seconds,
  latency: { p50: r.latency.p50, p90: r.latency.p90, p99: r.latency.p99, max: r.latency.max },
  loadCpuShare: (cpu.user + cpu.system) / 1e6 / wallS,
  tokensUsed: next - usedBefore,
  firstToken: usedBefore,
  exhausted,
};
process.stdout.write(`result ${JSON.stringify(out)}\n`);
process.exit(0);
