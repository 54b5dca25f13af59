/**
 * The DPoP proof check alone (RFC 9449 §4.3: src/engine/dpop/proof.ts, built in dist/): proofs
 * per second one core verifies, by algorithm, beside the ES256 signature verification by itself
 * (node:crypto), so that what the check adds to the signature shows. Proofs are made beforehand,
 * one per check (each with its own jti), all valid for the URL checked.
 *
 * Usage: node bench/micro/dpop-proof.js [--n 3000]
 */
import { generateKeyPairSync, randomUUID, sign, verify } from 'node:crypto';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { verifyProof } from '../../dist/engine/dpop/proof.js';

const { values } = parseArgs({ options: { n: { type: 'string', default: '3000' } } });
const n = Number(values.n);
const url = 'https://auth.example.test/oauth/token';

/** node:crypto's key pair and the JWS alg, the hash and the signature encoding for it. */
const ALGS = {
  ES256: { key: () => generateKeyPairSync('ec', { namedCurve: 'P-256' }), hash: 'sha256', opts: { dsaEncoding: 'ieee-p1363' } },
  EdDSA: { key: () => generateKeyPairSync('ed25519'), hash: null, opts: {} },
  RS256: { key: () => generateKeyPairSync('rsa', { modulusLength: 2048 }), hash: 'sha256', opts: {} },
};

function proofs(alg, count) {
  const a = ALGS[alg];
  const { privateKey, publicKey } = a.key();
  const header = Buffer.from(JSON.stringify({ typ: 'dpop+jwt', alg, jwk: publicKey.export({ format: 'jwk' }) })).toString('base64url');
  const iat = Math.floor(Date.now() / 1000);
  return Array.from({ length: count }, () => {
    const input = `${header}.${Buffer.from(JSON.stringify({ jti: randomUUID(), htm: 'POST', htu: url, iat })).toString('base64url')}`;
    return { input, jws: `${input}.${sign(a.hash, Buffer.from(input), { key: privateKey, ...a.opts }).toString('base64url')}`, publicKey, a };
  });
}

const out = {};
for (const alg of Object.keys(ALGS)) {
  const made = proofs(alg, n);
  for (const p of made.slice(0, 200)) await verifyProof(p.jws, { method: 'POST', url }, Date.now()); // warm-up
  let t0 = performance.now();
  for (const p of made) await verifyProof(p.jws, { method: 'POST', url }, Date.now());
  const check = (performance.now() - t0) / n;
  t0 = performance.now();
  for (const p of made) verify(p.a.hash, Buffer.from(p.input), { key: p.publicKey, ...p.a.opts }, Buffer.from(p.jws.slice(p.input.length + 1), 'base64url'));
  const bare = (performance.now() - t0) / n;
  out[alg] = { proof_check_us: +(check * 1000).toFixed(1), signature_only_us: +(bare * 1000).toFixed(1), checks_per_s: Math.round(1000 / check) };
}
console.log(JSON.stringify(out));
