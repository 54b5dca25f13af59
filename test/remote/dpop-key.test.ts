import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { calculateJwkThumbprint, decodeProtectedHeader, EmbeddedJWK, jwtVerify, type JWK } from 'jose';
import { describe, expect, it } from 'vitest';
import { loadDpopKey } from '../../src/remote/dpop-key.js';

/**
 * The CLI's DPoP keys and proofs (RFC 9449 §4.2): each kind of key file, a generated key written
 * only where asked and never over a file, and proofs that jose verifies with the key in their header.
 */
const dir = mkdtempSync(join(tmpdir(), 'dpop-key-'));
const htu = new URL('https://auth.example.test/oauth/token?x=1');

async function verified(proof: string) {
  const { payload, protectedHeader } = await jwtVerify(proof, EmbeddedJWK, { typ: 'dpop+jwt' });
  return { payload, protectedHeader, jkt: await calculateJwkThumbprint(protectedHeader.jwk!, 'sha256') };
}

describe('DPoP keys of the CLI', () => {
  it.each([
    ['EC P-256 PEM (PKCS#8)', () => generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8' }), 'ES256'],
    ['EC P-384 PEM (SEC1)', () => generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey.export({ format: 'pem', type: 'sec1' }), 'ES384'],
    ['RSA PEM (PKCS#1)', () => generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'pem', type: 'pkcs1' }), 'PS256'],
    ['Ed25519 JWK', () => JSON.stringify(generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' })), 'EdDSA'],
    ['RSA JWK naming RS256', () => JSON.stringify({ ...generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' }), alg: 'RS256' }), 'RS256'],
  ])('signs proofs with a %s key, the public key alone in the header', async (name, make, alg) => {
    const file = join(dir, name.replace(/\W+/g, '-'));
    writeFileSync(file, make() as string);
    const key = await loadDpopKey(file);
    expect(key.alg).toBe(alg);
    const proof = await key.proof('POST', htu, 'n-1');
    const { payload, protectedHeader, jkt } = await verified(proof);
    expect(protectedHeader).toMatchObject({ typ: 'dpop+jwt', alg });
    for (const member of ['d', 'p', 'q', 'dp', 'dq', 'qi']) expect(protectedHeader.jwk).not.toHaveProperty(member);
    expect(payload).toMatchObject({ htm: 'POST', htu: 'https://auth.example.test/oauth/token', nonce: 'n-1' });
    expect(typeof payload.jti).toBe('string');
    expect(Math.abs(payload.iat! - Date.now() / 1000)).toBeLessThan(5);
    expect(jkt).toBe(key.jkt);
    expect((await verified(await key.proof('POST', htu))).payload.jti).not.toBe(payload.jti); // a new jti each time
  });

  it('refuses a public key, a symmetric key and a file that is not a key, without quoting the file', async () => {
    const pub = join(dir, 'public.jwk');
    writeFileSync(pub, JSON.stringify(generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' })));
    await expect(loadDpopKey(pub)).rejects.toThrow(/public JWK/);
    const oct = join(dir, 'oct.jwk');
    writeFileSync(oct, JSON.stringify({ kty: 'oct', k: 'c2VjcmV0LXNlY3JldA', d: 'x' }));
    await expect(loadDpopKey(oct)).rejects.toThrow(/not a private key/);
    const junk = join(dir, 'junk');
    writeFileSync(junk, 'tcr_secret-looking-content');
    await expect(loadDpopKey(junk)).rejects.toThrow(/is not a private key as a JWK or PEM$/);
    await expect(loadDpopKey(join(dir, 'absent'))).rejects.toThrow(/cannot read/);
  });

  it('generates a P-256 key in memory, or writes it (0600) where asked and never over a file', async () => {
    const memory = await loadDpopKey('generate');
    expect([memory.alg, memory.source]).toEqual(['ES256', 'generated']);
    const out = join(dir, 'new.jwk');
    const saved = await loadDpopKey('generate', out);
    expect(statSync(out).mode & 0o777).toBe(0o600);
    const again = await loadDpopKey(out);
    expect(again.jkt).toBe(saved.jkt); // the file is the same key: its tokens can be refreshed later
    expect((JSON.parse(readFileSync(out, 'utf8')) as JWK).d).toBeDefined();
    await expect(loadDpopKey('generate', out)).rejects.toThrow(/exists/);
    expect(decodeProtectedHeader(await again.proof('GET', htu)).jwk).not.toHaveProperty('d');
  });
});
