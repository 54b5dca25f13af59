import { ManualClock } from '../../src/engine/clock.js';
import { Engine, type EngineOptions } from '../../src/engine/engine.js';
import type { IssueInput } from '../../src/engine/issue.js';
import type { ClientOutcome, IntrospectionResult, RevocationResult, TokenResponse } from '../../src/engine/results.js';
import { digestToken } from '../../src/engine/tokens.js';
import { MemoryStore } from '../../src/store/memory/index.js';
import type { ClientRecord, TokenRecord, TokenStore } from '../../src/store/store.js';

/**
 * Factories for engine tests: a MemoryStore, a ManualClock and an Engine over them. Nothing here
 * sleeps; time moves only through `clock.advance`.
 */

/** The tests' "now": deliberately not on a whole second, so that ms → s truncation shows. */
export const START = Date.UTC(2026, 0, 1, 12, 0, 0) + 789;
export const SECOND = 1000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

export type EngineSetupOptions = Omit<EngineOptions, 'store' | 'clock'> & { store?: TokenStore; clock?: ManualClock };

export interface EngineSetup<S extends TokenStore = MemoryStore> {
  engine: Engine;
  store: S;
  clock: ManualClock;
}

export function makeEngine(options?: Omit<EngineSetupOptions, 'store'>): EngineSetup;
export function makeEngine<S extends TokenStore>(options: EngineSetupOptions & { store: S }): EngineSetup<S>;
export function makeEngine(options: EngineSetupOptions = {}): EngineSetup<TokenStore> {
  const store = options.store ?? new MemoryStore();
  const clock = options.clock ?? new ManualClock(START);
  const engine = new Engine({ issuer: 'https://auth.example.test', node: 'node-a', ...options, store, clock });
  return { engine, store, clock };
}

/**
 * A client record written straight into the store: no scrypt, so that tests that never
 * authenticate stay fast. Public unless a `secretHash` is given.
 */
export async function addClient(store: TokenStore, overrides: Partial<ClientRecord> = {}): Promise<ClientRecord> {
  const record: ClientRecord = {
    id: 'app',
    name: 'App',
    secretHash: null,
    scope: 'read write admin',
    orgId: 'org-1',
    audience: 'https://api.example.test',
    accessTtlMs: null,
    refreshTtlMs: null,
    createdAt: START,
    secretUpdatedAt: START,
    redirectUris: [],
    grantTypes: ['refresh_token'],
    loginProvider: false,
    requireDpop: false,
    ...overrides,
  };
  await store.createClient(record, {});
  return record;
}

/** Issues a grant for `client` (user `alice` unless told otherwise). */
export function issueFor(engine: Engine, client: ClientRecord, overrides: Partial<IssueInput> = {}): Promise<TokenResponse> {
  return engine.issue({ clientId: client.id, username: 'alice', ...overrides });
}

/**
 * A client's credentials as the engine's client calls take them: a public client (the tests'
 * default) by its id alone; a confidential one with `secret`.
 */
export function credentialsOf(client: Pick<ClientRecord, 'id'>, secret?: string): { clientId: string; secrets: string[] } {
  return { clientId: client.id, secrets: secret === undefined ? [] : [secret] };
}

/** Spec 4.1 through {@link Engine.refreshAsClient}: the token response. */
export async function refreshAs(
  engine: Engine,
  input: { client: Pick<ClientRecord, 'id'>; refreshToken: string; scope?: string; secret?: string },
): Promise<TokenResponse> {
  return (await engine.refreshAsClient({ credentials: credentialsOf(input.client, input.secret), token: input.refreshToken, scope: input.scope })).result;
}

/** Spec 4.2 through {@link Engine.revokeAsClient}: the whole outcome (`result` is the spec 2.2 record). */
export function revokeAs(engine: Engine, input: { client: Pick<ClientRecord, 'id'>; token: string; secret?: string }): Promise<ClientOutcome<RevocationResult>> {
  return engine.revokeAsClient({ credentials: credentialsOf(input.client, input.secret), token: input.token });
}

/**
 * Spec 2.3 for `token` as the operator sees it (what a confidential client introspecting it
 * would be answered): for asserting on a token's state.
 */
export async function introspected(engine: Engine, token: string): Promise<IntrospectionResult> {
  const seen = await engine.inspect({ token });
  return seen.verdict === 'unknown' ? { active: false } : seen.introspection;
}

/** The stored record of a token string, or null. */
export function recordOf(store: TokenStore, token: string): Promise<TokenRecord | null> {
  return store.findTokenByDigest(digestToken(token));
}

/** The stored record of a token string; fails the test if there is none. */
export async function mustRecordOf(store: TokenStore, token: string): Promise<TokenRecord> {
  const record = await recordOf(store, token);
  if (!record) throw new Error('token not in the store');
  return record;
}

/** Settles a promise into a value or the error it rejected with, for asserting on both. */
export async function settle<T>(promise: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  try {
    return { ok: true, value: await promise };
  } catch (error) {
    return { ok: false, error };
  }
}

/** A promise with its resolve function outside, to hold a task or a store call until told. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** Lets every pending promise callback run (a few macrotask turns, no timers). */
export async function flush(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
}
