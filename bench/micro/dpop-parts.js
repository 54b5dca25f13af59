/**
 * Where one DPoP proof check's CPU goes (src/engine/dpop/proof.ts, built in dist/), part by
 * part, in µs of this process's CPU time per proof (process.cpuUsage, so that other load on the
 * machine counts less than in wall time): the whole check, and beside it each of its steps
 * alone, as the check runs them on an ES256 proof whose key is imported already (a client
 * signs all its proofs with one key). The parts need not add up to the whole exactly.
 *
 * Usage: node bench/micro/dpop-parts.js [--n 20000] [--rounds 5]
 */
import { createHash, createPublicKey, generateKeyPairSync, randomUUID, sign, verify } from 'node:crypto';
import { parseArgs } from 'node:util';
import { base64url, decodeProtectedHeader } from 'jose';
import { jwkThumbprint, replayKey, verifyProof } from '../../dist/engine/dpop/proof.js';

const { values } = parseArgs({ options: { n: { type: 'string', default: '20000' }, rounds: { type: 'string', default: '5' } } });
const n = Number(values.n);
const url = 'https://auth.example.test/oauth/token';
const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const jwk = publicKey.export({ format: 'jwk' });
const header = Buffer.from(JSON.stringify({ typ: 'dpop+jwt', alg: 'ES256', jwk })).toString('base64url');
const iat = Math.floor(Date.now() / 1000);
const proofs = Array.from({ length: n }, () => {
  const input = `${header}.${Buffer.from(JSON.stringify({ jti: randomUUID(), htm: 'POST', htu: url, iat })).toString('base64url')}`;
  return `${input}.${sign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
});
const key = createPublicKey({ key: jwk, format: 'jwk' });
const jkt = jwkThumbprint(jwk);

/** µs of CPU per item of `run` over every proof. */
async function cpu(run) {
  const t0 = process.cpuUsage();
  for (const p of proofs) await run(p);
  const t = process.cpuUsage(t0);
  return (t.user + t.system) / n;
}

const parts = {
  whole_check: (p) => verifyProof(p, { method: 'POST', url }, Date.now()),
  signature_verify: (p) => {
    const dot = p.lastIndexOf('.');
    verify('sha256', Buffer.from(p.slice(0, dot), 'ascii'), { key, dsaEncoding: 'ieee-p1363' }, Buffer.from(p.slice(dot + 1), 'base64url'));
  },
  format_regex: (p) => /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(p),
  header_decode: (p) => decodeProtectedHeader(p),
  thumbprint: () => jwkThumbprint(jwk),
  claims_decode: (p) => JSON.parse(Buffer.from(base64url.decode(p.slice(p.indexOf('.') + 1, p.lastIndexOf('.')))).toString('utf8')),
  replay_key: () => replayKey(jkt, 'b4d5e8a4-5d0e-4b1f-9d59-0f7c5e0a1b2c'),
  sha256_small: () => createHash('sha256').update('x').digest('base64url'),
};

for (const run of Object.values(parts)) for (const p of proofs.slice(0, 2000)) await run(p); // warm-up
const results = Object.fromEntries(Object.keys(parts).map((k) => [k, []]));
for (let r = 0; r < Number(values.rounds); r++) for (const [k, run] of Object.entries(parts)) results[k].push(await cpu(run));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const out = Object.fromEntries(Object.entries(results).map(([k, xs]) => [k, { median_us: +median(xs).toFixed(2), min_us: +Math.min(...xs).toFixed(2), max_us: +Math.max(...xs).toFixed(2) }]));
process.stdout.write(JSON.stringify({ n, rounds: Number(values.rounds), alg: 'ES256', cpu_us_per_proof: out }, null, 1) + '\n');
