import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/engine.js';
import { ROTATION_RACE_WINDOW_MS } from '../../src/engine/context.js';
import { InvalidTokenError } from '../../src/engine/errors.js';
import { MemoryStore } from '../../src/store/memory/index.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import type { ClientRecord, TokenStore, TokenType } from '../../src/store/store.js';
import { addClient, introspected, makeEngine, MINUTE, refreshAs, revokeAs, settle } from '../helpers/engine.js';

/**
 * Model-based test of spec part 3: random sequences of issue, refresh, revoke (as the owning
 * client or another), clock advances and introspection, checked step by step against a tiny
 * model of every token's state. After every step every token's introspection is compared too.
 * On the memory store (many runs) and on the SQLite store (its real SQL), with the same model.
 */

const ACCESS_TTL = 10 * MINUTE;
const REFRESH_TTL = 60 * MINUTE;

type Action =
  | { kind: 'issue'; client: number }
  | { kind: 'refresh'; pick: number; asOwner: boolean }
  | { kind: 'revoke'; pick: number; asOwner: boolean }
  | { kind: 'advance'; ms: number }
  | { kind: 'introspect'; pick: number };

const action: fc.Arbitrary<Action> = fc.oneof(
  fc.record({ kind: fc.constant('issue' as const), client: fc.integer({ min: 0, max: 1 }) }),
  fc.record({ kind: fc.constant('refresh' as const), pick: fc.nat(), asOwner: fc.boolean() }),
  fc.record({ kind: fc.constant('revoke' as const), pick: fc.nat(), asOwner: fc.boolean() }),
  fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 40 * MINUTE }) }),
  fc.record({ kind: fc.constant('introspect' as const), pick: fc.nat() }),
);

/** What the model knows of one token. */
interface ModelToken {
  token: string;
  type: TokenType;
  client: number;
  grant: number;
  expiresAt: number;
  revoked: boolean;
  /** Replaced by rotation: no longer active; presenting it again is a lost race, then reuse. */
  replaced: boolean;
  replacedAt?: number;
  jti?: string;
}

class Run {
  readonly tokens: ModelToken[] = [];
  private grants = 0;

  constructor(
    readonly engine: Engine,
    readonly clients: ClientRecord[],
    readonly now: () => number,
    readonly advance: (ms: number) => void,
    readonly rotate: boolean,
  ) {}

  isActive(t: ModelToken): boolean {
    return !t.revoked && !t.replaced && t.expiresAt > this.now();
  }

  private pick(n: number): ModelToken | undefined {
    return this.tokens.length === 0 ? undefined : this.tokens[n % this.tokens.length];
  }

  private caller(t: ModelToken, asOwner: boolean): number {
    return asOwner ? t.client : 1 - t.client;
  }

  private revokeGrant(grant: number): void {
    for (const t of this.tokens) if (t.grant === grant) t.revoked = true;
  }

  async step(a: Action): Promise<void> {
    if (a.kind === 'advance') return this.advance(a.ms);
    if (a.kind === 'issue') return this.issue(a.client);
    const t = this.pick(a.pick);
    if (!t) return;
    if (a.kind === 'introspect') return this.checkIntrospection(t);
    if (a.kind === 'revoke') return this.revoke(t, this.caller(t, a.asOwner));
    return this.refresh(t, this.caller(t, a.asOwner));
  }

  private async issue(client: number): Promise<void> {
    const r = await this.engine.issue({ clientId: this.clients[client]!.id, username: `user${client}` });
    const grant = this.grants++;
    const now = this.now();
    this.tokens.push(
      { token: r.refresh_token, type: 'refresh_token', client, grant, expiresAt: now + REFRESH_TTL, revoked: false, replaced: false },
      { token: r.access_token, type: 'access_token', client, grant, expiresAt: now + ACCESS_TTL, revoked: false, replaced: false, jti: r.jti },
    );
  }

  private async refresh(t: ModelToken, caller: number): Promise<void> {
    const outcome = await settle(refreshAs(this.engine, { client: this.clients[caller]!, refreshToken: t.token }));
    let expected: 'unknown' | 'revoked' | 'replaced' | 'expired' | 'ok';
    if (t.type !== 'refresh_token' || caller !== t.client) expected = 'unknown';
    else if (t.revoked) expected = 'revoked';
    else if (t.expiresAt <= this.now()) expected = 'expired';
    else if (t.replaced && this.now() <= t.replacedAt! + ROTATION_RACE_WINDOW_MS) expected = 'replaced'; // a lost race: nothing revoked
    else if (t.replaced) {
      expected = 'revoked';
      this.revokeGrant(t.grant); // reuse detection
    } else expected = 'ok';

    if (expected !== 'ok') {
      expect(outcome.ok ? 'ok' : (outcome.error as InvalidTokenError).reason).toBe(expected);
      if (!outcome.ok) expect(outcome.error).toBeInstanceOf(InvalidTokenError);
      return;
    }
    if (!outcome.ok) throw outcome.error;
    const r = outcome.value;
    const now = this.now();
    expect(r.stime).toBe(now);
    expect(r.expires_in).toBe(ACCESS_TTL / 1000);
    this.tokens.push({ token: r.access_token, type: 'access_token', client: t.client, grant: t.grant, expiresAt: now + ACCESS_TTL, revoked: false, replaced: false, jti: r.jti });
    if (!this.rotate) {
      expect(r.refresh_token).toBe(t.token);
      return;
    }
    expect(r.refresh_token).not.toBe(t.token);
    t.replaced = true;
    t.replacedAt = now;
    const expiresAt = Math.min(now + REFRESH_TTL, t.expiresAt);
    this.tokens.push({ token: r.refresh_token, type: 'refresh_token', client: t.client, grant: t.grant, expiresAt, revoked: false, replaced: false });
  }

  private async revoke(t: ModelToken, caller: number): Promise<void> {
    const { result } = await revokeAs(this.engine, { client: this.clients[caller]!, token: t.token });
    let expected: string;
    if (caller !== t.client) expected = 'token_invalid';
    else if (t.revoked || t.replaced) {
      expected = 'token_already_revoked';
      // A replaced refresh token: its revocation ends the grant all the same (contract 3).
      if (t.replaced && t.type === 'refresh_token') this.revokeGrant(t.grant);
    }
    else if (t.expiresAt <= this.now()) expected = 'token_invalid';
    else {
      expected = 'token_revoke_success';
      t.revoked = true;
      if (t.type === 'refresh_token') this.revokeGrant(t.grant);
    }
    expect(result.code).toBe(expected);
  }

  async checkIntrospection(t: ModelToken): Promise<void> {
    const result = await introspected(this.engine, t.token);
    if (!this.isActive(t)) {
      expect(result).toStrictEqual({ active: false });
      return;
    }
    expect(result).toMatchObject({
      active: true,
      token_type: t.type,
      client_id: this.clients[t.client]!.id,
      username: `user${t.client}`,
      exp: Math.floor(t.expiresAt / 1000),
    });
    if (!result.active) return;
    t.jti ??= result.jti;
    expect(result.jti).toBe(t.jti);
  }
}

/** A store for one scenario, and how to dispose of it. */
type StoreFactory = () => Promise<{ store: TokenStore; close: () => Promise<void> }>;

async function runScenario(rotate: boolean, actions: Action[], open: StoreFactory): Promise<void> {
  const opened = await open();
  try {
    await runScenarioOn(opened.store, rotate, actions);
  } finally {
    await opened.close();
  }
}

async function runScenarioOn(chosen: TokenStore, rotate: boolean, actions: Action[]): Promise<void> {
  const { engine, store, clock } = makeEngine({ rotateRefreshTokens: rotate, store: chosen });
  const clients = [
    await addClient(store, { id: 'a', accessTtlMs: ACCESS_TTL, refreshTtlMs: REFRESH_TTL }),
    await addClient(store, { id: 'b', accessTtlMs: ACCESS_TTL, refreshTtlMs: REFRESH_TTL }),
  ];
  const run = new Run(engine, clients, () => clock.now(), (ms) => clock.advance(ms), rotate);
  for (const a of actions) {
    await run.step(a);
    for (const t of run.tokens) await run.checkIntrospection(t);
  }
  // The store agrees with the model on how many tokens are active.
  expect((await engine.listTokens({ state: 'active' })).length).toBe(run.tokens.filter((t) => run.isActive(t)).length);
}

let sandbox: string;
beforeAll(() => {
  sandbox = mkdtempSync(join(tmpdir(), 'tokenctl-state-machine-'));
});
afterAll(() => rmSync(sandbox, { recursive: true, force: true }));

let files = 0;
const STORES: { name: string; runs: number; open: StoreFactory }[] = [
  { name: 'memory store', runs: 150, open: async () => ({ store: new MemoryStore(), close: async () => undefined }) },
  {
    // The same model against the real SQL (transactions, conditional updates, group commit).
    name: 'SQLite store',
    runs: 100,
    open: async () => {
      const file = join(sandbox, `s${files++}.db`);
      const store = await SqliteStore.open(file);
      return { store, close: () => store.close() };
    },
  },
];

describe.each(STORES)('state machine (spec part 3) against a model: $name', ({ runs, open }) => {
  // Start with an issue, so that most sequences have tokens to act on.
  const scenario = fc.array(action, { minLength: 1, maxLength: 40 }).map((rest): Action[] => [{ kind: 'issue', client: 0 }, ...rest]);

  it('without rotation: the refresh token stays as issued', async () => {
    await fc.assert(fc.asyncProperty(scenario, (actions) => runScenario(false, actions, open)), { numRuns: runs });
  });

  it('with rotation: replaced tokens are inactive and their reuse ends the grant', async () => {
    await fc.assert(fc.asyncProperty(scenario, (actions) => runScenario(true, actions, open)), { numRuns: runs });
  });
});
