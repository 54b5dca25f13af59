/**
 * The engine's CPU per refresh, with and without a DPoP proof (dist/ on a copy of a bench pool
 * store, SQLite, no HTTP): `Engine.tokenAsClient` as POST /oauth/token calls it, 50 requests in
 * flight, in µs of this process's CPU time (process.cpuUsage: other load counts less than in wall
 * time), alternating the two kinds for `--rounds` rounds. The difference is what DPoP costs the
 * server per request outside HTTP; bench/micro/dpop-parts.js splits the proof check itself.
 *
 * Usage: node bench/micro/dpop-engine.js --db POOL.db --tokens POOL-refresh.txt [--n 4000] [--rounds 4]
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { generateKeyPairSync, randomUUID, sign } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Engine } from '../../dist/engine/engine.js';
import { SqliteStore } from '../../dist/store/sqlite/store.js';
import { BENCH_CLIENT } from '../setup-store.js';

const { values } = parseArgs({ options: { db: { type: 'string' }, tokens: { type: 'string' }, n: { type: 'string', default: '4000' }, rounds: { type: 'string', default: '4' } } });
const n = Number(values.n);
const dir = mkdtempSync(join(tmpdir(), 'tokenctl-dpop-engine-'));
const file = join(dir, 'tokens.db');
copyFileSync(/** @type {string} */ (values.db), file);
const store = await SqliteStore.open(file);
const issuer = 'https://auth.example.test';
const engine = new Engine({ store, issuer });
const tokens = readFileSync(/** @type {string} */ (values.tokens), 'utf8').split('\n').filter(Boolean);
let next = 0;
const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const header = Buffer.from(JSON.stringify({ typ: 'dpop+jwt', alg: 'ES256', jwk: publicKey.export({ format: 'jwk' }) })).toString('base64url');
const proof = () => {
  const input = `${header}.${Buffer.from(JSON.stringify({ jti: randomUUID(), htm: 'POST', htu: `${issuer}/oauth/token`, iat: Math.floor(Date.now() / 1000) })).toString('base64url')}`;
  return `${input}.${sign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
};
const credentials = { clientId: BENCH_CLIENT.id, secrets: [BENCH_CLIENT.secret] };

/** µs of CPU per request for `count` refreshes, 50 at a time; the proofs are made before the clock starts. */
async function run(dpop, count) {
  const requests = Array.from({ length: count }, () => ({
    token: tokens[next++ % tokens.length],
    dpop: dpop ? { header: proof(), method: 'POST', url: `${issuer}/oauth/token` } : undefined,
  }));
  const t0 = process.cpuUsage();
  let i = 0;
  const lane = async () => {
    while (i < requests.length) {
      const r = requests[i++];
      await engine.tokenAsClient({ grant: engine.tokenRequest({ grant_type: 'refresh_token', refresh_token: r.token }), credentials, dpop: r.dpop });
    }
  };
  await Promise.all(Array.from({ length: 50 }, lane));
  const t = process.cpuUsage(t0);
  return (t.user + t.system) / count;
}

await run(false, 500);
await run(true, 500);
const out = { bearer_us: [], dpop_us: [] };
for (let r = 0; r < Number(values.rounds); r++) {
  out.bearer_us.push(+(await run(false, n)).toFixed(1));
  out.dpop_us.push(+(await run(true, n)).toFixed(1));
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
process.stdout.write(JSON.stringify({ n, ...out, bearer_median_us: median(out.bearer_us), dpop_median_us: median(out.dpop_us), dpop_extra_us: +(median(out.dpop_us) - median(out.bearer_us)).toFixed(1) }) + '\n');
await store.close();
rmSync(dir, { recursive: true, force: true });
