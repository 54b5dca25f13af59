import type { AuditEntry, AuditFilter, BulkSelector, ClientRecord, ReceiverRecord, SigningKeyRecord, TokenFilter, TokenRecord, TokenStore } from '../store/store.js';
import { AuthorizationFlow } from './authorization/index.js';
import { ClientAuthenticator, type AuthenticatorOptions } from './authenticator.js';
import { auditPage, listAudit, type AuditPage } from './audit.js';
import type { PresentedCredentials } from './client-auth.js';
import * as clients from './clients.js';
import { systemClock, type Clock } from './clock.js';
import { presentedDigest } from './tokens.js';
import { clientView, type EngineContext } from './context.js';
import { engineConfig, type EngineConfig } from './settings.js';
import { InvalidDpopProofError, UnauthorizedClientError } from './errors.js';
import { BEARER, DPOP_ALGORITHMS, DpopChecks } from './dpop/index.js';
import { clientMayUse, GRANTS, parseTokenRequest, refreshGrant, type GrantTable, type ParsedGrant } from './grants/index.js';
import type { Parameters } from './parameters.js';
import { inspect, introspectForClient } from './introspect.js';
import { issueGrants, issueTokens, type IssueInput } from './issue.js';
import { countAuditOlderThan, countPurgeable, countTokens, listTokens, planPurge, purge, status, type PurgeOptions, type PurgePlan, type PurgeResult, type StatusReport } from './maintenance.js';
import type { ClientCall, ClientRequest, RefreshRequest, TokenRequest } from './client-requests.js';
import * as receivers from './receivers.js';
import { refreshAsOperator } from './refresh.js';
import * as signingKeys from './signing-keys.js';
import * as streams from './streams.js';
import type { ClientOutcome, ClientView, Inspection, IntrospectionResult, RevocationResult, TokenEndpointResponse, TokenResponse, TokenView } from './results.js';
import { countBulk, revokeAsOperator, revokeBulk, revokeFound, type BulkOptions, type BulkRevocation } from './revoke.js';

export interface EngineOptions extends Partial<EngineConfig> {
  store: TokenStore;
  clock?: Clock;
  auth?: AuthenticatorOptions;
  /** The grant types of the token endpoint; default {@link GRANTS}. */
  grants?: GrantTable;
}

/**
 * The token lifecycle of spec parts 1–7: one object that the CLI and the HTTP server both call.
 * It knows nothing of oclif, HTTP or SQL: it works on a {@link TokenStore} and a {@link Clock}.
 * `actor` arguments name who acts, for the audit trail: a client id, `cli:<os user>`, or `serve:<node>`.
 */
export class Engine {
  readonly store: TokenStore;
  readonly config: EngineConfig;
  private readonly ctx: EngineContext;
  private readonly authenticator: ClientAuthenticator;
  private readonly grants: GrantTable;
  /** DPoP at the token endpoint (RFC 9449; `dpop/`). */
  private readonly dpop: DpopChecks;
  /** The authorization code flow's authorize request, login back channel and return (contract 5). */
  readonly authorization: AuthorizationFlow;

  constructor(options: EngineOptions) {
    const config = engineConfig(options);
    this.store = options.store;
    this.config = config;
    this.ctx = { store: options.store, clock: options.clock ?? systemClock, config };
    this.authenticator = new ClientAuthenticator(options.store, options.auth);
    this.grants = options.grants ?? GRANTS;
    this.dpop = new DpopChecks(config.dpopNonceSecret);
    this.authorization = new AuthorizationFlow(this.ctx, (credentials, source) => this.authenticate(credentials, source));
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
  /** Changes a client's redirect URIs, grant types or login-provider mark. */
  updateClient(id: string, input: clients.UpdateClientInput, actor: string): Promise<ClientView> {
    return clients.updateClient(this.ctx, id, input, actor);
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
  /** The `grant_type` values the token endpoint serves (RFC 8414 `grant_types_supported`). */
  grantTypes(): string[] {
    return [...this.grants.keys()];
  }
  /**
   * RFC 6749 §3.2, POST /oauth/token: the grant a token request asks for, its parameters read and
   * checked, before the client is authenticated (a malformed request is refused as such).
   */
  tokenRequest(params: Parameters): ParsedGrant {
    return parseTokenRequest(this.grants, params);
  }
  /**
   * POST /oauth/token: authenticates the client and reads the token the grant presents in one
   * store read, then the grant makes its exchange (spec 4.1 for refresh_token).
   */
  async tokenAsClient<R extends TokenEndpointResponse>(request: TokenRequest<R>): Promise<ClientOutcome<R>> {
    // When the request was taken up, before its token was read: a lost rotation race is told by it.
    const presentedAt = this.ctx.clock.now();
    const { grant } = request;
    // RFC 9449 §4.3 but the replay: a proof that does not hold is refused whoever sent it.
    const proof = await this.dpop.proofOf(request.dpop, presentedAt);
    const { client, token: record } = await this.authenticatePresenting(request, grant.presented);
    if (!clientMayUse(client, grant.type)) throw new UnauthorizedClientError(grant.type);
    if (proof === null && client.requireDpop) {
      throw new InvalidDpopProofError('required', 'This client must send a DPoP proof with every token request (RFC 9449 §5.2)');
    }
    // The replay last, once the client is known: only authenticated requests fill the cache.
    if (proof !== null) await this.dpop.remember(this.ctx.store, proof, presentedAt);
    const outcome = await grant.exchange(this.ctx, client, record, presentedAt, proof === null ? BEARER : { jkt: proof.jkt });
    const nonce = proof === null ? undefined : this.dpop.nonce(this.ctx.clock.now());
    return nonce === undefined ? outcome : { ...outcome, dpopNonce: nonce };
  }
  /** The signature algorithms a DPoP proof may use (RFC 8414 `dpop_signing_alg_values_supported`). */
  dpopAlgorithms(): readonly string[] {
    return DPOP_ALGORITHMS;
  }
  /** Spec 4.1 for a client on the command line (`refresh --client-id`): as over HTTP. */
  refreshAsClient(request: RefreshRequest): Promise<ClientOutcome<TokenResponse>> {
    return this.tokenAsClient({ ...request, grant: refreshGrant(request.token, request.scope) });
  }
  /** Spec 4.2, POST /oauth/revocation: the client revokes one of its own tokens (contract 3). */
  async revokeAsClient(request: ClientRequest): Promise<ClientOutcome<RevocationResult>> {
    const { client, token: record } = await this.authenticatePresenting(request, request.token);
    const { result, jti, done } = await revokeFound(this.ctx, client, record);
    return { result, clientId: client.id, jti, done };
  }
  /** Spec 4.3, POST /oauth/introspection: what this client may be told of the token (`introspect.ts`). */
  async introspectAsClient(request: ClientRequest): Promise<ClientOutcome<IntrospectionResult>> {
    const { client, token: record } = await this.authenticatePresenting(request, request.token);
    return introspectForClient(this.ctx, client, record);
  }
  /**
   * Spec part 5 for a request that presents `token`: the client, and the token's record (null:
   * none), in one store read. The request's log learns the client.
   */
  private async authenticatePresenting(request: ClientCall, token: string | null): Promise<{ client: ClientRecord; token: TokenRecord | null }> {
    const found = await this.authenticator.authenticateAndFind(request.credentials, token === null ? null : presentedDigest(token), request.source);
    if (request.log !== undefined) request.log.clientId = found.client.id;
    return found;
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
  /** A refresh by an operator holding the store: as the token's own client. */
  refreshAsOperator(refreshToken: string, scope?: string): Promise<TokenResponse> {
    return refreshAsOperator(this.ctx, refreshToken, scope);
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
  planPurge(olderThanMs: number): Promise<PurgePlan> {
    return planPurge(this.ctx, olderThanMs);
  }
  /** How many audit lines `purge` with `auditOlderThanMs` would delete now. */
  countAuditOlderThan(olderThanMs: number): Promise<number> {
    return countAuditOlderThan(this.ctx, olderThanMs);
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
  /** `tokenctl audit`: a page, its total, one line per operation unless `batches`. */
  auditPage(filter: Omit<AuditFilter, 'hideActions'> & { batches?: boolean }): Promise<AuditPage> {
    return auditPage(this.ctx, filter);
  }

  // ---- security event receivers (docs/events.md) ------------------------------------------------
  addReceiver(input: receivers.AddReceiverInput, actor: string): Promise<receivers.ReceiverView> {
    return receivers.addReceiver(this.ctx, input, actor);
  }
  listReceivers(): Promise<receivers.ReceiverStatusView[]> {
    return receivers.listReceivers(this.ctx);
  }
  receiverStatus(id: string): Promise<receivers.ReceiverStatusView> {
    return receivers.receiverStatus(this.ctx, id);
  }
  updateReceiver(id: string, change: { retentionMs?: number } & receivers.StreamChoice, actor: string): Promise<receivers.ReceiverStatusView> {
    return receivers.updateReceiver(this.ctx, id, change, actor);
  }
  removeReceiver(id: string, actor: string): Promise<void> {
    return receivers.removeReceiver(this.ctx, id, actor);
  }
  /** Requeues the receiver's dead letters; returns how many. */
  retryReceiver(id: string, actor: string): Promise<number> {
    return receivers.retryReceiver(this.ctx, id, actor);
  }
  /** The keys SETs are signed with, newest first, without their private parts. */
  listSigningKeys(): Promise<signingKeys.SigningKeyView[]> {
    return signingKeys.listSigningKeys(this.ctx);
  }
  /** A new current signing key (audited); the previous one stays published for 7 days. */
  rotateSigningKey(actor: string, alg?: signingKeys.SetAlg): Promise<signingKeys.RotatedSigningKey> {
    return signingKeys.rotateSigningKey(this.ctx, actor, alg);
  }
  /** The audit line of a rotation serve makes by itself (the key 90 days old), written with the key. */
  keyRotationAudit(actor: string, key: Pick<SigningKeyRecord, 'kid' | 'alg'>): AuditEntry {
    return signingKeys.keyRotationAudit(actor, key, this.ctx.clock.now());
  }
  // ---- SSF stream management (streams.ts) ------------------------------------------------------
  /** RFC 6750: who a Bearer access token is, with the SSF scope a read (`write` false) or a change needs. */
  ssfAccess(authorization: string | undefined, write: boolean): Promise<streams.SsfAccess> {
    return streams.ssfAccess(this.ctx, authorization, write);
  }
  listStreams(clientId: string): Promise<ReceiverRecord[]> {
    return streams.listStreams(this.ctx, clientId);
  }
  getStream(clientId: string, streamId: unknown): Promise<ReceiverRecord> {
    return streams.getStream(this.ctx, clientId, streamId);
  }
  createStream(clientId: string, body: unknown): Promise<ReceiverRecord> {
    return streams.createStream(this.ctx, clientId, body);
  }
  updateStream(clientId: string, body: unknown, replace: boolean): Promise<ReceiverRecord> {
    return streams.updateStream(this.ctx, clientId, body, replace);
  }
  deleteStream(clientId: string, streamId: unknown): Promise<void> {
    return streams.deleteStream(this.ctx, clientId, streamId);
  }
  /** `push`: a verification held while the push stream was paused, for the caller to push now that it is enabled. */
  setStreamStatus(clientId: string, body: unknown): Promise<{ stream: ReceiverRecord; push?: streams.VerificationToPush }> {
    return streams.setStreamStatus(this.ctx, clientId, body);
  }
  /** `push`: the verification event for the caller to push now; none when it is kept with the stream (poll, or a paused push stream). */
  requestVerification(clientId: string, body: unknown): Promise<{ stream: ReceiverRecord; jti: string; state?: string; push?: streams.VerificationToPush }> {
    return streams.requestVerification(this.ctx, clientId, body);
  }
  /** RFC 8936 with an access token: the poll stream of the token's client (`ssf.manage`), as {@link ssfAccess} says. */
  async pollReceiverByToken(authorization: string): Promise<ReceiverRecord | streams.SsfAccess> {
    const access = await this.ssfAccess(authorization, true);
    if (!access.ok) return access;
    const client = await this.store.getClient(access.clientId);
    if (!client) return { ok: false, status: 401, error: 'invalid_token', description: 'the access token is not active' };
    return receivers.pollReceiverOf(this.ctx, client);
  }
  /** RFC 8936: authenticates the client (spec part 5) and returns the poll receiver it polls as, or AccessDeniedError. */
  async authenticatePollReceiver(credentials: PresentedCredentials, source?: string): Promise<ReceiverRecord> {
    return receivers.pollReceiverOf(this.ctx, await this.authenticate(credentials, source));
  }
}
