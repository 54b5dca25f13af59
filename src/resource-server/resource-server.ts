import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { expressMiddleware, fastifyHook, presentedToken, writeRefusal, type Check, type HeadersLike, type Principal, type Refusal } from './adapters.js';
import { AnswerCache, covers, type IntrospectionAnswer, type RevokedTokens } from './cache.js';
import { SYSTEM_CLOCK, type ResourceServerClock } from './clock.js';
import { DpopGuard } from './dpop-guard.js';
import type { ResourceServerOptions, ResourceServerStats } from './options.js';
import { createPushHandler } from './push-handler.js';
import { RequestChecker } from './request-check.js';
import { SeenSet } from './seen-set.js';
import { EventPoller, SetVerifier, type VerifiedSet } from './set-receiver.js';
import { basicAuthorization, replyJson, Transport } from './transport.js';

export type { ResourceServerOptions, ResourceServerStats } from './options.js';

/** The token could not be checked (the server did not answer, or answered an error): a 503, never a pass. */
export class IntrospectionUnavailable extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'IntrospectionUnavailable';
  }
}


/**
 * Protects an API with tokenctl: introspects bearer tokens with client credentials, caches the
 * answers, and drops them when tokenctl says (security events) that a revocation covers them.
 */
export class ResourceServer {
  private readonly transport: Transport;
  private readonly cache: AnswerCache;
  private readonly base: URL;
  private readonly authorization: string;
  private readonly poller: EventPoller | undefined;
  private readonly verifier: SetVerifier;
  private readonly inflight = new Map<string, Promise<IntrospectionAnswer>>();
  private readonly fallbackMaxAgeMs: number;
  private readonly timeoutMs: number;
  /** Events applied, numbered, newest last: an introspection compares them with its start. */
  private recent: { seq: number; at: number; event: RevokedTokens }[] = [];
  private seq = 0;
  private streamUp: boolean;
  private issuer: Promise<string> | undefined;
  private readonly counters = { hits: 0, misses: 0, introspections: 0, events: 0, revocations: 0, dropped: 0, replays: 0, foreign: 0, dpopRefused: 0 };
  private readonly dpop: DpopGuard | undefined;
  private readonly checker: RequestChecker;
  /** The refusal {@link authenticate} decided, for {@link sendUnauthorized} to send. */
  private readonly refusals = new WeakMap<object, Refusal>();
  private readonly seen: SeenSet;
  private readonly audiences: readonly string[] | undefined;
  private readonly upWaiters: (() => void)[] = [];
  private readonly clock: ResourceServerClock;

  constructor(private readonly options: ResourceServerOptions) {
    this.base = new URL(options.url.replace(/\/*$/, '/'));
    this.clock = options.clock ?? SYSTEM_CLOCK;
    this.transport = new Transport(options.ca, 64);
    this.authorization = basicAuthorization(options.clientId, options.clientSecret);
    const maxAgeMs = options.cache?.maxAgeMs ?? 5 * 60_000;
    this.cache = new AnswerCache({
      maxEntries: options.cache?.maxEntries ?? 10_000,
      maxAgeMs,
      inactiveTtlMs: options.cache?.inactiveTtlMs ?? 10_000,
    });
    this.fallbackMaxAgeMs = options.fallbackMaxAgeMs ?? 2000;
    this.dpop = options.dpop ? new DpopGuard(options.dpop) : undefined;
    this.checker = new RequestChecker({ dpop: this.dpop, realm: options.realm, principalOf: (token) => this.principalOf(token), onDpopRefused: () => this.counters.dpopRefused++ });
    this.timeoutMs = options.introspectionTimeoutMs ?? 5000;
    const events = options.events ?? 'poll';
    if (events === 'push' && options.audience === undefined) {
      throw new TypeError("events: 'push' needs audience: the receiver's audience (tokenctl receiver list shows it), so that SETs signed for other receivers are refused");
    }
    const accepted = options.accept?.audience === undefined ? options.audience : options.accept.audience;
    this.audiences = accepted === false || accepted === undefined ? undefined : typeof accepted === 'string' ? [accepted] : [...accepted];
    // A SET older than an answer may be kept has nothing left to drop: remembered that long.
    this.seen = new SeenSet(100_000, Math.max(maxAgeMs, this.fallbackMaxAgeMs) + 60_000);
    // push has no liveness signal of its own: its stream counts as up (docs/resource-server.md).
    this.streamUp = events === 'push';
    this.verifier = new SetVerifier(this.transport, {
      jwksUrl: new URL(options.jwksUrl ?? '.well-known/jwks.json', this.base),
      issuer: () => this.issuerUrl(),
      audience: options.audience,
      refetchIntervalMs: 1000,
      clock: this.clock,
    });
    if (events === 'poll') {
      this.poller = new EventPoller({
        transport: this.transport,
        pollUrl: new URL('events/poll', this.base),
        authorization: this.authorization,
        verifier: this.verifier,
        apply: (set) => this.apply(set),
        onState: (up) => this.setStreamUp(up),
        onError: (error) => this.options.onError?.(error),
        maxEvents: 1000,
        longPollTimeoutMs: 35_000,
        clock: this.clock,
      });
      this.poller.start();
    }
  }

  /** The introspection answer for `token`: from the cache when it holds a good one, else from tokenctl. */
  async introspect(token: string): Promise<IntrospectionAnswer> {
    const key = createHash('sha256').update(token).digest('base64url');
    const now = this.clock.now();
    const cached = this.cache.get(key, now, this.streamUp ? -Infinity : now - this.fallbackMaxAgeMs);
    if (cached) {
      this.counters.hits++;
      return cached;
    }
    this.counters.misses++;
    let pending = this.inflight.get(key);
    if (!pending) {
      pending = this.ask(token, key).finally(() => this.inflight.delete(key));
      this.inflight.set(key, pending);
    }
    return pending;
  }

  /**
   * The principal of an active access token, or null (inactive, unknown, not an access token, or
   * bound to a DPoP key: such a token needs its proof, which only {@link check} and
   * {@link authenticate} see).
   */
  async verify(token: string): Promise<Principal | null> {
    const principal = await this.principalOf(token);
    return principal?.jkt === undefined ? principal : null;
  }

  /**
   * Node's http: the principal of the request's token, or null (no token, not an active access
   * token, a DPoP proof refused: answer with {@link sendUnauthorized}). Rejects with
   * {@link IntrospectionUnavailable} when the token cannot be checked (answer 503).
   */
  async authenticate(req: HeadersLike): Promise<Principal | null> {
    const result = await this.check(req);
    if (result.ok) return result.principal;
    if (result.refusal.status === 503) throw new IntrospectionUnavailable('the token could not be checked');
    this.refusals.set(req, result.refusal);
    return null;
  }

  /** Writes the 401 (or 400, 403) for `req`: what {@link authenticate} decided, else RFC 6750's for its header. */
  sendUnauthorized(res: ServerResponse, req?: HeadersLike): void {
    const decided = req ? this.refusals.get(req) : undefined;
    if (decided) return writeRefusal(res, decided);
    const token = req ? presentedToken(req, this.dpop !== undefined) : false;
    writeRefusal(res, this.checker.refuse(token === null ? 'missing' : token === false && req ? 'malformed' : 'invalid', token ? token.scheme : undefined));
  }

  /**
   * One request, checked: a principal with every scope in `scopes`, or the answer to send. With
   * `dpop`, a `DPoP` token needs a valid proof of the key its `cnf.jkt` names (RFC 9449 §7.1); a
   * bound token presented as `Bearer` is refused (§7.2).
   */
  readonly check = (req: HeadersLike, scopes: readonly string[] = []): Promise<Check> => this.checker.check(req, scopes);

  /** A fastify hook (`onRequest` or `preHandler`) setting `request.principal`. */
  fastify(options: { scopes?: readonly string[] } = {}) {
    return fastifyHook(this.check, options.scopes);
  }

  /** An express middleware setting `req.principal` and `res.locals.principal`. */
  express(options: { scopes?: readonly string[] } = {}) {
    return expressMiddleware(this.check, options.scopes);
  }

  /**
   * RFC 8935 push: a Node handler for the endpoint registered with `tokenctl receiver add ID
   * --push URL`. Answers 202 once the SET is verified and applied (or was already), 400 `{err}`
   * when it is not acceptable, 401 when `pushAuthorization` is set and not presented, 413 for a
   * body over `maxPushBytes`, 408 for one not in within 10 s, 503 while 4 others are being read.
   */
  pushHandler(): (req: IncomingMessage, res: ServerResponse) => void {
    return createPushHandler({
      authorization: this.options.pushAuthorization,
      maxBytes: this.options.maxPushBytes ?? 1 << 20,
      bodyTimeoutMs: 10_000,
      maxConcurrent: 4,
      receive: async (jws) => this.apply(await this.verifier.verify(jws)),
      onError: (error) => this.options.onError?.(error),
    });
  }

  /** Resolves once the event stream is up (poll: the backlog fetched and applied). */
  ready(): Promise<void> {
    return this.streamUp ? Promise.resolve() : new Promise((resolve) => this.upWaiters.push(resolve));
  }

  stats(): ResourceServerStats {
    return { ...this.counters, entries: this.cache.size, streamUp: this.streamUp };
  }

  /** Stops polling and closes the connections. */
  async close(): Promise<void> {
    await this.poller?.stop();
    this.transport.close();
  }

  /** The principal of an active access token meant for this API, bound or not. */
  private async principalOf(token: string): Promise<Principal | null> {
    const answer = await this.introspect(token);
    if (!answer.active || (answer.token_type !== undefined && answer.token_type !== 'access_token')) return null;
    if (!this.meantForUs(answer)) {
      this.counters.foreign++;
      return null;
    }
    const jkt = answer.cnf?.jkt;
    return {
      clientId: answer.client_id,
      username: answer.username,
      sub: answer.sub,
      scopes: answer.scope ? answer.scope.split(' ').filter(Boolean) : [],
      exp: answer.exp,
      jti: answer.jti,
      ...(typeof jkt === 'string' && { jkt }),
      answer,
    };
  }

  private async ask(token: string, key: string): Promise<IntrospectionAnswer> {
    // A revocation whose event arrives while the server is being asked may have been committed
    // after the server read the token: such an answer is asked again (the server has it by the
    // time its event is out), and never cached stale.
    for (let attempt = 0; ; attempt++) {
      const since = this.seq;
      const askedAt = this.clock.now();
      const answer = await this.post(token);
      if (answer.active && this.coveredSince(since, answer)) {
        if (attempt < 2) continue;
        return answer; // covered only by a grant's superset three times: active, and not cached
      }
      this.cache.set(key, answer, askedAt, this.streamUp ? Infinity : this.fallbackMaxAgeMs);
      return answer;
    }
  }

  private async post(token: string): Promise<IntrospectionAnswer> {
    this.counters.introspections++;
    let reply;
    try {
      reply = await this.transport.send(new URL('oauth/introspection', this.base), {
        method: 'POST',
        headers: { authorization: this.authorization, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: new URLSearchParams({ token, token_type_hint: 'access_token' }).toString(),
        timeoutMs: this.timeoutMs,
      });
    } catch (error) {
      throw this.unavailable(`introspection failed: ${(error as Error).message}`, error);
    }
    if (reply.status !== 200) throw this.unavailable(`introspection: HTTP ${reply.status}`);
    const answer = replyJson(reply, 'introspection') as IntrospectionAnswer;
    if (typeof answer !== 'object' || answer === null || typeof answer.active !== 'boolean') throw this.unavailable('introspection: no active member');
    return answer;
  }

  private unavailable(message: string, cause?: unknown): IntrospectionUnavailable {
    const error = new IntrospectionUnavailable(message, { cause });
    this.options.onError?.(error);
    return error;
  }

  private coveredSince(seq: number, answer: IntrospectionAnswer): boolean {
    for (let i = this.recent.length - 1; i >= 0 && this.recent[i]!.seq > seq; i--) if (covers(this.recent[i]!.event, answer)) return true;
    return false;
  }

  /** Drops what each revocation of a SET covers, oldest first, and remembers them for {@link coveredSince}. */
  private apply(set: VerifiedSet): void {
    const now = this.clock.now();
    // Acknowledged again (202, or in the next poll) but not applied again: RFC 8935 §2 lets the
    // transmitter resend a SET whose acknowledgement it lost, and a captured one costs nothing.
    if (!this.seen.firstTime(set.jti, now)) {
      this.counters.replays++;
      return;
    }
    if (set.revocations.length === 0) return;
    this.counters.events++;
    for (const revocation of set.revocations) {
      this.counters.revocations++;
      this.counters.dropped += this.cache.drop(revocation);
      this.recent.push({ seq: ++this.seq, at: now, event: revocation });
    }
    // Remembered while an introspection started before it can still be in flight (twice the
    // timeout), and forgotten in chunks so that a high rate of events does not copy on each one.
    const forget = now - 2 * this.timeoutMs - 1000;
    if (this.recent.length > 1024 && this.recent[1023]!.at < forget) this.recent = this.recent.filter((e) => e.at >= forget);
  }

  /** Whether an active token was meant for this API (`accept`): its audience and its client. */
  private meantForUs(answer: IntrospectionAnswer): boolean {
    if (this.audiences !== undefined) {
      const aud = answer.aud === undefined ? [] : typeof answer.aud === 'string' ? [answer.aud] : answer.aud;
      if (!aud.some((a) => this.audiences!.includes(a))) return false;
    }
    const clients = this.options.accept?.clientIds;
    return clients === undefined || (answer.client_id !== undefined && clients.includes(answer.client_id));
  }

  private setStreamUp(up: boolean): void {
    this.streamUp = up;
    if (up) for (const wake of this.upWaiters.splice(0)) wake();
  }

  private issuerUrl(): Promise<string> {
    if (this.options.issuer !== undefined) return Promise.resolve(this.options.issuer);
    this.issuer ??= this.transport.send(new URL('.well-known/oauth-authorization-server', this.base), { timeoutMs: 10_000 }).then(
      (reply) => {
        const issuer = (replyJson(reply, 'metadata') as { issuer?: unknown }).issuer;
        if (reply.status !== 200 || typeof issuer !== 'string') throw new Error(`metadata: HTTP ${reply.status}, no issuer`);
        return issuer;
      },
    );
    return this.issuer.catch((error: unknown) => {
      this.issuer = undefined;
      throw error;
    });
  }
}
