import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { bearerToken, expressMiddleware, fastifyHook, refusal, writeRefusal, type Check, type HeadersLike, type Principal } from './adapters.js';
import { AnswerCache, covers, type IntrospectionAnswer, type RevokedTokens } from './cache.js';
import { createPushHandler } from './push-handler.js';
import { SeenSets } from './seen-sets.js';
import { EventPoller, SetVerifier, type VerifiedSet } from './set-receiver.js';
import { basicAuthorization, replyJson, Transport } from './transport.js';

export interface ResourceServerOptions {
  /** tokenctl's base URL, e.g. `https://127.0.0.1:8443`. */
  url: string;
  /** The resource server's client: it introspects (RFC 7662) and polls events as this client. */
  clientId: string;
  clientSecret: string;
  /** A CA (PEM) to trust besides the system's: serve's development certificate. */
  ca?: string | Buffer;
  /**
   * How revocations reach the cache: `poll` (the default: RFC 8936 long polling, the client must be
   * registered with `tokenctl receiver add ID --poll --client CLIENT_ID`), `push` (RFC 8935: mount
   * {@link ResourceServer.pushHandler}), or `false` (none: every answer is kept at most
   * `fallbackMaxAgeMs`).
   */
  events?: 'poll' | 'push' | false;
  /**
   * The `aud` of the receiver's SETs (`tokenctl receiver add` prints it; by default the receiver's
   * id): a SET for another receiver is refused. Required with `events: 'push'`, where anyone can
   * post a SET tokenctl signed for someone else. By default also the `aud` every access token must
   * carry (see `accept`).
   */
  audience?: string;
  /**
   * Which active access tokens this API accepts (RFC 7662 §4, RFC 9068 §4: a resource server
   * checks that a token was meant for it). `audience`: the `aud` a token must carry (one of these);
   * default the `audience` above when it is given, `false` for any. `clientIds`: the clients whose
   * tokens are accepted; default any. A token that fails either is refused as not active (401).
   */
  accept?: { audience?: string | readonly string[] | false; clientIds?: readonly string[] };
  /** The `iss` of the SETs; read from the server's RFC 8414 metadata when not given. */
  issuer?: string;
  /** Default `<url>/.well-known/jwks.json`. */
  jwksUrl?: string;
  cache?: {
    /** Default 10000. */
    maxEntries?: number;
    /** An active answer is kept at most this long, and never past the token's `exp`. Default 5 minutes. */
    maxAgeMs?: number;
    /** An inactive answer is kept this long. Default 10 seconds. */
    inactiveTtlMs?: number;
  };
  /**
   * While the event stream is down (not yet up, a poll failed, a SET failed verification), a
   * cached answer is served only when it is younger than this, and new answers are kept no
   * longer. Default 2000 ms.
   */
  fallbackMaxAgeMs?: number;
  /** Default 5000 ms; a server that does not answer in time is a 503, never an accepted token. */
  introspectionTimeoutMs?: number;
  /** The realm of the `WWW-Authenticate` challenges. */
  realm?: string;
  /** push: the `Authorization` value tokenctl sends with each SET (the receiver's `--authorization-…`). */
  pushAuthorization?: string;
  /** push: the largest body accepted (413 past it, the rest never read). Default 1 MiB. */
  maxPushBytes?: number;
  /** Errors of the event stream and of introspection (never with a token or secret in them). Default: none. */
  onError?: (error: Error) => void;
}

export interface ResourceServerStats {
  /** Requests answered from the cache. */
  hits: number;
  /** Requests that asked the server (or joined a request already asking for the same token). */
  misses: number;
  /** Introspection requests sent. */
  introspections: number;
  /** Verified SETs applied (tokens-revoked SETs: one may carry several revocations). */
  events: number;
  /** Revocations applied: those of every SET counted in `events`. */
  revocations: number;
  /** Cached answers dropped by events. */
  dropped: number;
  /** SETs received again (same `jti`) and not applied a second time. */
  replays: number;
  /** Active access tokens refused because they were meant for another audience or client (`accept`). */
  foreign: number;
  entries: number;
  streamUp: boolean;
}

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
  private readonly counters = { hits: 0, misses: 0, introspections: 0, events: 0, revocations: 0, dropped: 0, replays: 0, foreign: 0 };
  private readonly seen: SeenSets;
  private readonly audiences: readonly string[] | undefined;
  private readonly upWaiters: (() => void)[] = [];

  constructor(private readonly options: ResourceServerOptions) {
    this.base = new URL(options.url.replace(/\/*$/, '/'));
    this.transport = new Transport(options.ca, 64);
    this.authorization = basicAuthorization(options.clientId, options.clientSecret);
    const maxAgeMs = options.cache?.maxAgeMs ?? 5 * 60_000;
    this.cache = new AnswerCache({
      maxEntries: options.cache?.maxEntries ?? 10_000,
      maxAgeMs,
      inactiveTtlMs: options.cache?.inactiveTtlMs ?? 10_000,
    });
    this.fallbackMaxAgeMs = options.fallbackMaxAgeMs ?? 2000;
    this.timeoutMs = options.introspectionTimeoutMs ?? 5000;
    const events = options.events ?? 'poll';
    if (events === 'push' && options.audience === undefined) {
      throw new TypeError("events: 'push' needs audience: the receiver's audience (tokenctl receiver list shows it), so that SETs signed for other receivers are refused");
    }
    const accepted = options.accept?.audience === undefined ? options.audience : options.accept.audience;
    this.audiences = accepted === false || accepted === undefined ? undefined : typeof accepted === 'string' ? [accepted] : [...accepted];
    // A SET older than an answer may be kept has nothing left to drop: remembered that long.
    this.seen = new SeenSets(100_000, Math.max(maxAgeMs, this.fallbackMaxAgeMs) + 60_000);
    // push has no liveness signal of its own: its stream counts as up (docs/resource-server.md).
    this.streamUp = events === 'push';
    this.verifier = new SetVerifier(this.transport, {
      jwksUrl: new URL(options.jwksUrl ?? '.well-known/jwks.json', this.base),
      issuer: () => this.issuerUrl(),
      audience: options.audience,
      refetchIntervalMs: 1000,
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
      });
      this.poller.start();
    }
  }

  /** The introspection answer for `token`: from the cache when it holds a good one, else from tokenctl. */
  async introspect(token: string): Promise<IntrospectionAnswer> {
    const key = createHash('sha256').update(token).digest('base64url');
    const now = Date.now();
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

  /** The principal of an active access token, or null (inactive, unknown, or not an access token). */
  async verify(token: string): Promise<Principal | null> {
    const answer = await this.introspect(token);
    if (!answer.active || (answer.token_type !== undefined && answer.token_type !== 'access_token')) return null;
    if (!this.meantForUs(answer)) {
      this.counters.foreign++;
      return null;
    }
    return {
      clientId: answer.client_id,
      username: answer.username,
      sub: answer.sub,
      scopes: answer.scope ? answer.scope.split(' ').filter(Boolean) : [],
      exp: answer.exp,
      jti: answer.jti,
      answer,
    };
  }

  /**
   * Node's http: the principal of the request's bearer token, or null (no token, or not an
   * active access token: answer with {@link sendUnauthorized}). Rejects with
   * {@link IntrospectionUnavailable} when the token cannot be checked (answer 503).
   */
  async authenticate(req: HeadersLike): Promise<Principal | null> {
    const token = bearerToken(req);
    return token ? this.verify(token) : null;
  }

  /** Writes the RFC 6750 401 for `req` (no token, a malformed header, or an invalid token). */
  sendUnauthorized(res: ServerResponse, req?: HeadersLike): void {
    const token = req ? bearerToken(req) : false;
    writeRefusal(res, refusal(token === null ? 'missing' : token === false && req ? 'malformed' : 'invalid', this.options.realm));
  }

  /** One request, checked: a principal with every scope in `scopes`, or the answer to send. */
  readonly check = async (req: HeadersLike, scopes: readonly string[] = []): Promise<Check> => {
    const token = bearerToken(req);
    if (token === null) return { ok: false, refusal: refusal('missing', this.options.realm) };
    if (token === false) return { ok: false, refusal: refusal('malformed', this.options.realm) };
    let principal: Principal | null;
    try {
      principal = await this.verify(token);
    } catch {
      return { ok: false, refusal: refusal('unavailable', this.options.realm) };
    }
    if (!principal) return { ok: false, refusal: refusal('invalid', this.options.realm) };
    if (!scopes.every((s) => principal.scopes.includes(s))) return { ok: false, refusal: refusal('insufficient_scope', this.options.realm, scopes) };
    return { ok: true, principal };
  };

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

  private async ask(token: string, key: string): Promise<IntrospectionAnswer> {
    // A revocation whose event arrives while the server is being asked may have been committed
    // after the server read the token: such an answer is asked again (the server has it by the
    // time its event is out), and never cached stale.
    for (let attempt = 0; ; attempt++) {
      const since = this.seq;
      const askedAt = Date.now();
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
    const now = Date.now();
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
