import { scrypt } from 'node:crypto';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { buildSpecAuthorization, parseBasicAuthorization } from '../../src/engine/client-auth.js';
import { InvalidClientError } from '../../src/engine/errors.js';
import { MemoryStore } from '../../src/store/memory/index.js';
import { makeEngine } from '../helpers/engine.js';

// Count every scrypt the engine runs (hashing at creation and verification), and still run it.
vi.mock('node:crypto', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:crypto')>();
  return { ...actual, scrypt: vi.fn(actual.scrypt) };
});
const scrypts = () => vi.mocked(scrypt).mock.calls.length;

async function setup(store = new MemoryStore()) {
  const env = makeEngine({ store });
  const { client_secret } = await env.engine.createClient({ name: 'conf', id: 'conf' }, 'cli:op');
  await env.engine.createClient({ name: 'pub', id: 'pub', public: true }, 'cli:op');
  return { ...env, secret: client_secret! };
}

async function refused(promise: Promise<unknown>, clientId: string): Promise<void> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(InvalidClientError);
  expect((error as InvalidClientError).message).toBe(`The client account or password is incorrect: ${clientId}`);
}

describe('Engine.authenticate (spec part 5)', () => {
  let env: Awaited<ReturnType<typeof setup>>;
  beforeAll(async () => {
    env = await setup();
  });

  it('a confidential client with its password: the client record', async () => {
    const client = await env.engine.authenticate({ clientId: 'conf', secrets: [env.secret] });
    expect(client.id).toBe('conf');
  });

  it('a confidential client with a wrong password, or with none: refused', async () => {
    await refused(env.engine.authenticate({ clientId: 'conf', secrets: ['wrong-password-1'] }), 'conf');
    await refused(env.engine.authenticate({ clientId: 'conf', secrets: [] }), 'conf');
  });

  it('any candidate may match: the one registered password is tried against each', async () => {
    const client = await env.engine.authenticate({ clientId: 'conf', secrets: ['not-it', env.secret] });
    expect(client.id).toBe('conf');
  });

  it('a public client without a password: the client record; with one: refused', async () => {
    expect((await env.engine.authenticate({ clientId: 'pub', secrets: [] })).id).toBe('pub');
    await refused(env.engine.authenticate({ clientId: 'pub', secrets: ['anything-at-all'] }), 'pub');
  });

  it('an unknown client: refused, with or without a password, after the same hashing work', async () => {
    await refused(env.engine.authenticate({ clientId: 'ghost', secrets: [] }), 'ghost');
    const before = scrypts();
    await refused(env.engine.authenticate({ clientId: 'ghost', secrets: ['guess-number-1'] }), 'ghost');
    expect(scrypts()).toBeGreaterThan(before);
  });

  it('an empty or control-character id: refused', async () => {
    await expect(env.engine.authenticate({ clientId: '', secrets: [] })).rejects.toBeInstanceOf(InvalidClientError);
    await expect(env.engine.authenticate({ clientId: 'a\u0000b', secrets: [env.secret] })).rejects.toBeInstanceOf(InvalidClientError);
  });

  it("the spec's Basic headers, scenario I and II, authenticate end to end", async () => {
    const conf = parseBasicAuthorization(buildSpecAuthorization('conf', env.secret));
    expect((await env.engine.authenticate(conf)).id).toBe('conf');
    const pub = parseBasicAuthorization(buildSpecAuthorization('pub'));
    expect((await env.engine.authenticate(pub)).id).toBe('pub');
    const rfc = parseBasicAuthorization('Basic ' + Buffer.from(`conf:${encodeURIComponent(env.secret)}`).toString('base64'));
    expect((await env.engine.authenticate(rfc)).id).toBe('conf');
  });
});

describe('the authentication cache', () => {
  it('a second authenticate with the same password runs no scrypt', async () => {
    const { engine, secret } = await setup();
    const start = scrypts();
    await engine.authenticate({ clientId: 'conf', secrets: [secret] });
    const before = scrypts();
    expect(before).toBe(start + 1); // the first one verifies
    await engine.authenticate({ clientId: 'conf', secrets: [secret] });
    await engine.authenticate({ clientId: 'conf', secrets: [secret] });
    expect(scrypts()).toBe(before);
  });

  it('a burst of identical presentations arriving at once costs one scrypt, and each gets the answer', async () => {
    const { engine, secret } = await setup();
    const start = scrypts();
    const clients = await Promise.all(Array.from({ length: 20 }, () => engine.authenticate({ clientId: 'conf', secrets: [secret] })));
    expect(clients.map((c) => c.id)).toEqual(Array(20).fill('conf'));
    expect(scrypts()).toBe(start + 1);
    const wrong = Array.from({ length: 20 }, () => refused(engine.authenticate({ clientId: 'conf', secrets: ['wrong-password-2'] }), 'conf'));
    await Promise.all(wrong);
    expect(scrypts()).toBe(start + 2);
  });

  it('a repeated wrong password runs no scrypt the second time, and is still refused', async () => {
    const { engine } = await setup();
    await refused(engine.authenticate({ clientId: 'conf', secrets: ['wrong-password-1'] }), 'conf');
    const before = scrypts();
    await refused(engine.authenticate({ clientId: 'conf', secrets: ['wrong-password-1'] }), 'conf');
    expect(scrypts()).toBe(before);
  });

  it('after rotateClientSecret the cached old password fails and the new one passes', async () => {
    const { engine, secret } = await setup();
    await engine.authenticate({ clientId: 'conf', secrets: [secret] });
    const { client_secret: fresh } = await engine.rotateClientSecret('conf', 'cli:op');
    await refused(engine.authenticate({ clientId: 'conf', secrets: [secret] }), 'conf');
    expect((await engine.authenticate({ clientId: 'conf', secrets: [fresh!] })).id).toBe('conf');
  });

  it('the same when the rotation happens through a second Engine on the same store (another process)', async () => {
    const { engine, store, secret } = await setup();
    await engine.authenticate({ clientId: 'conf', secrets: [secret] });
    await engine.authenticate({ clientId: 'conf', secrets: ['wrong-password-1'] }).catch(() => undefined);
    const { engine: other } = makeEngine({ store });
    const { client_secret: fresh } = await other.rotateClientSecret('conf', 'cli:op', 'wrong-password-1');
    await refused(engine.authenticate({ clientId: 'conf', secrets: [secret] }), 'conf');
    // A password refused (and remembered) under the old hash is the new one now: it passes.
    expect((await engine.authenticate({ clientId: 'conf', secrets: [fresh!] })).id).toBe('conf');
  });

  it('a client deleted through a second Engine no longer authenticates with a cached password', async () => {
    const { engine, store, secret } = await setup();
    await engine.authenticate({ clientId: 'conf', secrets: [secret] });
    const { engine: other } = makeEngine({ store });
    await other.deleteClient('conf', 'cli:op');
    await refused(engine.authenticate({ clientId: 'conf', secrets: [secret] }), 'conf');
  });

  it('a client re-created with the same id and another password refuses the cached old one', async () => {
    const { engine, secret } = await setup();
    await engine.authenticate({ clientId: 'conf', secrets: [secret] });
    await engine.deleteClient('conf', 'cli:op');
    await engine.createClient({ name: 'conf', id: 'conf', secret: 'another-secret-1' }, 'cli:op');
    await refused(engine.authenticate({ clientId: 'conf', secrets: [secret] }), 'conf');
    expect((await engine.authenticate({ clientId: 'conf', secrets: ['another-secret-1'] })).id).toBe('conf');
  });
});
