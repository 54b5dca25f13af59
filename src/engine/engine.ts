import type { AuditEntry, AuditFilter, BulkSelector, ClientRecord, TokenFilter, TokenRecord, TokenStore } from '../store/store.js';
import { ClientAuthenticator, type AuthenticatorOptions } from './authenticator.js';
import { listAudit } from './audit.js';
import type { PresentedCredentials } from './client-auth.js';
import * as clients from './clients.js';
import { systemClock, type Clock } from './clock.js';
import { presentedDigest } from './tokens.js';
import { clientView, DAY_MS, HOUR_MS, MAX_REFRESH_GRACE_MS, MAX_REFRESHES_PER_MINUTE, ROTATION_RACE_WINDOW_MS, type EngineConfig, type EngineContext } from './context.js';
import { InvalidInputError } from './errors.js';
import { inspect, introspect, introspectionOf } from './introspect.js';
import { issueGrants, issueTokens, type IssueInput } from './issue.js';
import { countPurgeable, countTokens, listTokens, purge, status, type PurgeOptions, type PurgeResult, type StatusReport } from './maintenance.js';
import { refresh, refreshAsOperator, type RefreshInput } from './refresh.js';
import type { ClientView, Inspection, IntrospectionResult, Revocation, RevocationResult, TokenResponse, TokenView } from './results.js';
import { countBulk, revokeAsClient, revokeAsOperator, revokeBulk, revokeFound, type BulkOptions, type BulkRevocation, type RevokeInput } from './revoke.js';

/** A client authenticated together with the token it presented, and that token's record (null: none). */
export interface Authenticated {
  client: ClientRecord;
  token: string;
  record: TokenRecord | null;
  /** When the request was taken up, before its token was read (a lost rotation race is told by it). */
  presentedAt: number;
}

export interface EngineOptions extends Partial<EngineConfig> {
  store: TokenStore;
  clock?: Clock;
  auth?: AuthenticatorOptions;
}

/**
 * The token lifecycle of spec parts 1–7: one object that the CLI and the HTTP server both call.
 * It knows nothing of oclif, HTTP or SQL: it works on a {@link TokenStore} and a {@link Clock}.
 * `actor` arguments name who acts, for the audit trail: a client id, or `cli:<os user>`.
 */
export class Engine {
  readonly store: TokenStore;
  readonly config: EngineConfig;
  private readonly ctx: EngineContext;
  private readonly authenticator: ClientAuthenticator;

  constructor(options: EngineOptions) {
    const config: EngineConfig = {
      issuer: options.issuer ?? 'https://localhost',
      node: options.node ?? 'tokenctl',
      accessTtlMs: options.accessTtlMs ?? HOUR_MS,
      refreshTtlMs: options.refreshTtlMs ?? 30 * DAY_MS,
      rotateRefreshTokens: options.rotateRefreshTokens ?? false,
      refreshGraceMs: options.refreshGraceMs ?? 0,
      rotationRaceWindowMs: options.rotationRaceWindowMs ?? ROTATION_RACE_WINDOW_MS,
      maxRefreshesPerMinute: options.maxRefreshesPerMinute ?? MAX_REFRESHES_PER_MINUTE,
    };
    if (!Number.isInteger(config.maxRefreshesPerMinute) || config.maxRefreshesPerMinute < 0) {
      throw new InvalidInputError('the limit of refreshes per minute must be a whole number, 0 for none');
    }
    if (config.refreshGraceMs < 0 || config.refreshGraceMs > MAX_REFRESH_GRACE_MS) {
      throw new InvalidInputError('the refresh grace period must be between 0s and 60s');
    }
    if (config.rotationRaceWindowMs < 0 || config.rotationRaceWindowMs > MAX_REFRESH_GRACE_MS) {
      throw new InvalidInputError('the rotation race window must be between 0s and 60s');
    }
    if (config.accessTtlMs < 1000 || config.refreshTtlMs < 1000) throw new InvalidInputError('token lifetimes must be at least 1s');
    this.store = options.store;
    this.config = config;
    this.ctx = { store: options.store, clock: options.clock ?? systemClock, config };
    this.authenticator = new ClientAuthenticator(options.store, options.auth);
  }

  // ---- clients ------------------------------------------------------------------------------
  createClient(input: clients.CreateClientInput, actor: string): Promise<clients.ClientWithSecret> {
    return clients.createClient(this.ctx, input, actor);
  }
  async listClients(): Promise<ClientView[]> {
    return (await this.store.listClients()).map(clientView);
  }
  async getClient(id: string): Promise<ClientView> {
    return clientView(await clients.getClientOrThrow(this.ctx, id));
  }
  /** How many tokens a client has, by state (counted in the store: cheap for any number). */
  async countClientTokens(id: string): Promise<{ total: number; active: number; expired: number; revoked: number }> {
    const { tokens } = await this.store.stats(this.ctx.clock.now(), (await clients.getClientOrThrow(this.ctx, id)).id);
    const counts = { total: 0, active: 0, expired: 0, revoked: 0 };
    for (const byState of Object.values(tokens)) {
      for (const state of ['active', 'expired', 'revoked'] as const) {
        counts[state] += byState[state];
        counts.total += byState[state];
      }
    }
    return counts;
  }
  deleteClient(id: string, actor: string): Promise<ClientView> {
    return clients.deleteClient(this.ctx, id, actor);
  }
  rotateClientSecret(id: string, actor: string, secret?: string): Promise<clients.ClientWithSecret> {
    return clients.rotateClientSecret(this.ctx, id, actor, secret);
  }
  /**
   * Spec part 5: returns the client the credentials prove, or throws InvalidClientError.
   * `source` is the caller's network address, for the brute-force budgets (none from the CLI).
   */
  authenticate(credentials: PresentedCredentials, source?: string): Promise<ClientRecord> {
    return this.authenticator.authenticate(credentials, source);
  }
  /**
   * Spec part 5 for an endpoint that acts on a presented token: authenticates the client and
   * reads the token's record with it, in one store read. Throws InvalidClientError as
   * {@link authenticate} does. Hand the result to {@link introspectAuthenticated},
   * {@link revokeAuthenticated} or {@link refreshAuthenticated}.
   */
  async authenticateWithToken(credentials: PresentedCredentials, token: string, source?: string): Promise<Authenticated> {
    const presentedAt = this.ctx.clock.now();
    const { client, token: record } = await this.authenticator.authenticateAndFind(credentials, presentedDigest(token), source);
    return { client, token, record, presentedAt };
  }
  /**
   * Spec 4.3 by the authenticated client. A confidential client may introspect any token (a
   * resource server checks tokens issued to others); a public client, which proves nothing but
   * its id, only its own: any other token is inactive to it (contract 3, revised 2026-11).
   */
  introspectAuthenticated(a: Authenticated): IntrospectionResult {
    const visible = a.client.secretHash !== null || a.record?.clientId === a.client.id;
    return introspectionOf(this.ctx, visible ? a.record : null, this.ctx.clock.now());
  }
  /** Spec 4.2 by the authenticated client: the spec 2.2 record, and the jti it acted on. */
  revokeAuthenticated(a: Authenticated): Promise<Revocation> {
    return revokeFound(this.ctx, a.client, a.record);
  }
  /** Spec 4.1 by the authenticated client, `a.token` being the refresh token. */
  refreshAuthenticated(a: Authenticated, scope?: string): Promise<TokenResponse> {
    return refresh(this.ctx, { client: a.client, refreshToken: a.token, scope }, a.record, a.presentedAt);
  }

  // ---- the lifecycle --------------------------------------------------------------------------
  /** The stand-in for the spec's "not shown" login: a new grant. */
  issue(input: IssueInput): Promise<TokenResponse> {
    return issueTokens(this.ctx, input);
  }
  /** `count` new grants at once, in one store transaction (e.g. test data, load tests). */
  issueMany(input: IssueInput, count: number): Promise<TokenResponse[]> {
    return issueGrants(this.ctx, input, count);
  }
  /** Spec 4.1. */
  refresh(input: RefreshInput): Promise<TokenResponse> {
    return refresh(this.ctx, input);
  }
  /** A refresh by an operator holding the store: as the token's own client. */
  refreshAsOperator(refreshToken: string, scope?: string): Promise<TokenResponse> {
    return refreshAsOperator(this.ctx, refreshToken, scope);
  }
  /** Spec 4.2, by an authenticated client: the spec 2.2 record, and the jti it acted on. */
  revoke(input: RevokeInput): Promise<Revocation> {
    return revokeAsClient(this.ctx, input);
  }
  /** Revocation by an operator (CLI): any client's token. */
  revokeAsOperator(token: string, actor: string): Promise<RevocationResult> {
    return revokeAsOperator(this.ctx, token, actor);
  }
  countBulk(selector: BulkSelector): Promise<number> {
    return countBulk(this.ctx, selector);
  }
  /** Every active token the selector names, in batches; `signal` stops it at a batch boundary. */
  revokeBulk(selector: BulkSelector, actor: string, options?: BulkOptions): Promise<BulkRevocation> {
    return revokeBulk(this.ctx, selector, actor, options);
  }
  /** Spec 4.3. */
  introspect(token: string): Promise<IntrospectionResult> {
    return introspect(this.ctx, token);
  }
  /** The operator's view of a token, by the token or by its jti. */
  inspect(by: { token: string } | { jti: string }): Promise<Inspection> {
    return inspect(this.ctx, by);
  }

  // ---- maintenance ------------------------------------------------------------------------------
  listTokens(filter: Omit<TokenFilter, 'now'>): Promise<TokenView[]> {
    return listTokens(this.ctx, filter);
  }
  countTokens(filter: Omit<TokenFilter, 'now'>): Promise<number> {
    return countTokens(this.ctx, filter);
  }
  countPurgeable(olderThanMs: number): Promise<number> {
    return countPurgeable(this.ctx, olderThanMs);
  }
  purge(options: PurgeOptions, actor: string): Promise<PurgeResult> {
    return purge(this.ctx, options, actor);
  }
  status(): Promise<StatusReport> {
    return status(this.ctx);
  }
  audit(filter: AuditFilter): Promise<AuditEntry[]> {
    return listAudit(this.ctx, filter);
  }
}
