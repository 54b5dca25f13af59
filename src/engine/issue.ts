import type { ClientRecord, ClientStore, TokenRecord, TokenType, TokenWrites } from '../store/store.js';
import { getClientOrThrow, validateScope } from './clients.js';
import { splitScope, toSeconds, type EngineContext } from './context.js';
import { InvalidInputError, InvalidScopeError } from './errors.js';
import type { TokenResponse } from './results.js';
import { digestToken, generateToken, newJti } from './tokens.js';

/** The store ports this module uses (store/ports/). */
type Ports = ClientStore & TokenWrites;

export interface IssueInput {
  clientId: string;
  username: string;
  sub?: string;
  scope?: string;
  accessTtlMs?: number;
  refreshTtlMs?: number;
}

/** A token string with the record the store keeps of it. */
export interface Minted {
  token: string;
  record: TokenRecord;
}

interface MintSpec {
  type: TokenType;
  client: ClientRecord;
  grantId: string;
  username: string;
  sub: string;
  scope: string;
  ttlMs: number;
  /** The DPoP key thumbprint to bind the token to (RFC 9449 §6); none: a bearer token. */
  jkt?: string | null;
}

export function accessTtl(ctx: EngineContext<unknown>, client: ClientRecord): number {
  return client.accessTtlMs ?? ctx.config.accessTtlMs;
}

export function refreshTtl(ctx: EngineContext<unknown>, client: ClientRecord): number {
  return client.refreshTtlMs ?? ctx.config.refreshTtlMs;
}

/** Makes a new token and its record. Nothing is stored yet. */
export function mint(ctx: EngineContext<unknown>, spec: MintSpec, now: number): Minted {
  const token = generateToken(spec.type);
  return {
    token,
    record: {
      jti: newJti(),
      digest: digestToken(token),
      type: spec.type,
      grantId: spec.grantId,
      clientId: spec.client.id,
      username: spec.username,
      sub: spec.sub,
      scope: spec.scope,
      audience: spec.client.audience,
      orgId: spec.client.orgId,
      node: ctx.config.node,
      issuedAt: now,
      notBefore: now,
      expiresAt: now + spec.ttlMs,
      revokedAt: null,
      replacedAt: null,
      replacedBy: null,
      jkt: spec.jkt ?? null,
    },
  };
}

/** Spec 2.1, all nine fields; `jti` is the access token's. */
export function tokenResponse(ctx: EngineContext<unknown>, access: Minted, refreshToken: string, client: ClientRecord): TokenResponse {
  return {
    access_token: access.token,
    expires_in: toSeconds(access.record.expiresAt - access.record.issuedAt),
    jti: access.record.jti,
    node: ctx.config.node,
    org_id: client.orgId,
    refresh_token: refreshToken,
    scope: access.record.scope,
    stime: access.record.issuedAt,
    token_type: access.record.jkt === null ? 'bearer' : 'DPoP',
  };
}

/**
 * Requested scope must be a subset of what is allowed (empty allowed: anything). A malformed or
 * excessive scope is {@link InvalidScopeError} (RFC 6749 §5.2: "invalid, unknown, malformed, or
 * exceeds the scope granted"), which a refresh reports as `invalid_scope`.
 */
export function narrowScope(requested: string | undefined, allowed: string, allowAnyWhenEmpty: boolean): string {
  if (requested === undefined) return allowed;
  let wanted: string[];
  try {
    wanted = splitScope(validateScope(requested));
  } catch (err) {
    if (err instanceof InvalidInputError) throw new InvalidScopeError(err.message);
    throw err;
  }
  const granted = new Set(splitScope(allowed));
  if (allowAnyWhenEmpty && granted.size === 0) return wanted.join(' ');
  const extra = wanted.filter((s) => !granted.has(s));
  if (extra.length > 0) {
    throw new InvalidScopeError(`The requested scope exceeds the granted scope: ${extra.join(' ')} (granted: ${allowed || 'none'})`);
  }
  return wanted.join(' ');
}

/**
 * What a login would issue (the spec's issuance is "not shown"): a new grant with a refresh
 * token and an access token.
 */
export async function issueTokens(ctx: EngineContext<Ports>, input: IssueInput): Promise<TokenResponse> {
  const [response] = await issueGrants(ctx, input, 1);
  return response!;
}

/** The most grants one {@link issueGrants} call makes (two tokens each, one transaction). */
export const MAX_ISSUE_COUNT = 10_000;

/**
 * `count` grants for the same user and client, as `count` logins would make, written in one
 * store transaction (insertTokens): all or none.
 */
export async function issueGrants(ctx: EngineContext<Ports>, input: IssueInput, count: number): Promise<TokenResponse[]> {
  if (!Number.isInteger(count) || count < 1 || count > MAX_ISSUE_COUNT) throw new InvalidInputError(`the count must be between 1 and ${MAX_ISSUE_COUNT}`);
  const client = await getClientOrThrow(ctx, input.clientId);
  const username = input.username.trim();
  if (username === '') throw new InvalidInputError('the user name must not be empty');
  let scope: string;
  try {
    scope = narrowScope(input.scope, client.scope, true);
  } catch (err) {
    if (err instanceof InvalidScopeError) throw new InvalidInputError(`${err.message} for client "${client.id}"`);
    throw err;
  }
  for (const [ms, what] of [[input.accessTtlMs, 'access'], [input.refreshTtlMs, 'refresh']] as const) {
    if (ms !== undefined && ms < 1000) throw new InvalidInputError(`the ${what} token lifetime must be at least 1s`);
  }
  const now = ctx.clock.now();
  const records: TokenRecord[] = [];
  const responses: TokenResponse[] = [];
  for (let i = 0; i < count; i++) {
    const common = { client, grantId: newJti(), username, sub: input.sub ?? username, scope };
    const refresh = mint(ctx, { ...common, type: 'refresh_token', ttlMs: input.refreshTtlMs ?? refreshTtl(ctx, client) }, now);
    const access = mint(ctx, { ...common, type: 'access_token', ttlMs: input.accessTtlMs ?? accessTtl(ctx, client) }, now);
    records.push(refresh.record, access.record);
    responses.push(tokenResponse(ctx, access, refresh.token, client));
  }
  await ctx.store.insertTokens(records);
  return responses;
}
