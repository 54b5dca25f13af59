import { createLocalJWKSet, errors, jwtVerify, type JSONWebKeySet } from 'jose';
import type { RevokedTokens } from './cache.js';
import type { ResourceServerClock } from './clock.js';
import { replyJson, type Transport } from './transport.js';

/** The event type tokenctl emits (docs/events.md). */
export const TOKENS_REVOKED = 'urn:tokenctl:secevent:tokens-revoked';

/** A SET that cannot be accepted, with the RFC 8935 §2.3 / RFC 8936 error code to report. */
export class SetRejected extends Error {
  constructor(
    readonly err: 'invalid_request' | 'invalid_key' | 'invalid_issuer' | 'invalid_audience',
    description: string,
  ) {
    super(description);
    this.name = 'SetRejected';
  }
}

/** A verified SET: its `jti` and the revocations it tells of, oldest first (none when it is not a tokens-revoked SET). */
export interface VerifiedSet {
  jti: string;
  revocations: RevokedTokens[];
}

export interface SetVerifierOptions {
  jwksUrl: URL;
  /** The `iss` every SET must carry (the server's issuer URL). */
  issuer: () => Promise<string>;
  /** The `aud` every SET must carry, or undefined to accept any. */
  audience: string | undefined;
  /** An unknown `kid` refetches the JWKS, at most this often (ms). */
  refetchIntervalMs: number;
  clock: ResourceServerClock;
}

/**
 * Verifies Security Event Tokens (RFC 8417) with jose against the transmitter's JWKS: ES256,
 * `typ` secevent+jwt, the issuer, the audience; a `kid` it does not know refetches the JWKS once
 * (a rotated key), and is a transient failure when it is still unknown.
 */
export class SetVerifier {
  private keys: ReturnType<typeof createLocalJWKSet> | undefined;
  private fetchedAt = -Infinity;

  constructor(
    private readonly transport: Transport,
    private readonly options: SetVerifierOptions,
  ) {}

  async verify(jws: string): Promise<VerifiedSet> {
    if (!this.keys) await this.refetch();
    try {
      return await this.check(jws);
    } catch (error) {
      if (!(error instanceof errors.JWKSNoMatchingKey) || this.options.clock.now() - this.fetchedAt < this.options.refetchIntervalMs) throw classify(error);
      await this.refetch();
      try {
        return await this.check(jws);
      } catch (again) {
        throw classify(again);
      }
    }
  }

  private async refetch(): Promise<void> {
    const reply = await this.transport.send(this.options.jwksUrl, { headers: { accept: 'application/json' }, timeoutMs: 10_000 });
    if (reply.status !== 200) throw new Error(`JWKS: HTTP ${reply.status} from ${this.options.jwksUrl.href}`);
    this.keys = createLocalJWKSet(replyJson(reply, 'JWKS') as JSONWebKeySet);
    this.fetchedAt = this.options.clock.now();
  }

  private async check(jws: string): Promise<VerifiedSet> {
    const { payload } = await jwtVerify(jws, this.keys!, {
      algorithms: ['ES256'],
      typ: 'secevent+jwt',
      issuer: await this.options.issuer(),
      ...(this.options.audience !== undefined ? { audience: this.options.audience } : {}),
    });
    if (typeof payload.jti !== 'string') throw new SetRejected('invalid_request', 'the SET has no jti');
    const events = payload['events'];
    if (typeof events !== 'object' || events === null) throw new SetRejected('invalid_request', 'the SET has no events claim');
    const revoked = (events as Record<string, unknown>)[TOKENS_REVOKED];
    if (revoked === undefined) return { jti: payload.jti, revocations: [] };
    return { jti: payload.jti, revocations: revocationsOf(revoked) };
  }
}

const MEMBERS = ['reason', 'jti', 'token_type', 'grant_id', 'username', 'client_id'] as const;

/**
 * The `revocations` of a tokens-revoked event, checked: a non-empty list of objects, each with a
 * string `scope`, its other members strings when present (`at` a number). Anything else rejects the
 * whole SET: a revocation read wrong could keep a revoked answer.
 */
function revocationsOf(payload: unknown): RevokedTokens[] {
  const list = typeof payload === 'object' && payload !== null ? (payload as { revocations?: unknown }).revocations : undefined;
  if (!Array.isArray(list) || list.length === 0) throw new SetRejected('invalid_request', 'the tokens-revoked event has no revocations');
  return list.map((r: unknown, i) => {
    if (typeof r !== 'object' || r === null || typeof (r as { scope?: unknown }).scope !== 'string') {
      throw new SetRejected('invalid_request', `revocation ${i} has no scope`);
    }
    const revocation = r as Record<string, unknown>;
    const wrong = MEMBERS.find((m) => revocation[m] !== undefined && typeof revocation[m] !== 'string');
    if (wrong !== undefined) throw new SetRejected('invalid_request', `revocation ${i}: ${wrong} is not a string`);
    if (revocation.at !== undefined && typeof revocation.at !== 'number') throw new SetRejected('invalid_request', `revocation ${i}: at is not a number`);
    return revocation as unknown as RevokedTokens;
  });
}

/** jose's errors as RFC 8935 error codes; an unknown kid and anything else stay transient. */
function classify(error: unknown): unknown {
  if (error instanceof SetRejected) return error;
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'iss') return new SetRejected('invalid_issuer', 'unexpected iss');
    if (error.claim === 'aud') return new SetRejected('invalid_audience', 'unexpected aud');
    return new SetRejected('invalid_request', `invalid claim ${error.claim}`);
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) return new SetRejected('invalid_key', 'signature verification failed');
  if (error instanceof errors.JWSInvalid || error instanceof errors.JWTInvalid || error instanceof errors.JOSEAlgNotAllowed) {
    return new SetRejected('invalid_request', error.message);
  }
  return error;
}

export interface PollerOptions {
  transport: Transport;
  pollUrl: URL;
  /** The Basic header of the resource server's client. */
  authorization: string;
  verifier: SetVerifier;
  /** Called with each verified SET, in the order the transmitter sent them. */
  apply(set: VerifiedSet): void;
  /** Whether the stream is up: every poll answered and every SET verified. */
  onState(up: boolean): void;
  onError(error: Error): void;
  maxEvents: number;
  /** A long poll with no answer after this many ms counts as a failure. */
  longPollTimeoutMs: number;
  /** What the waits between polls (the back-off, the pause after a SET refused) sleep on. */
  clock: ResourceServerClock;
}

/**
 * RFC 8936 long polling: POSTs `{ack, setErrs, maxEvents, returnImmediately}` in a loop,
 * verifies and applies each SET, acknowledges it in the next request. The first poll after a
 * failure returns at once (the backlog), the next ones wait for events. Failures retry after
 * 250 ms doubling to 5 s, with jitter.
 */
export class EventPoller {
  private readonly abort = new AbortController();
  private up = false;
  private stopped = false;
  private loop: Promise<void> | undefined;

  constructor(private readonly options: PollerOptions) {}

  start(): void {
    this.loop ??= this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    await this.loop;
  }

  private async run(): Promise<void> {
    let ack: string[] = [];
    let setErrs: Record<string, { err: string; description: string }> = {};
    let immediate = true;
    let delay = 0;
    while (!this.stopped) {
      try {
        const body = JSON.stringify({ maxEvents: this.options.maxEvents, returnImmediately: immediate || !this.up, ack, setErrs });
        const reply = await this.options.transport.send(this.options.pollUrl, {
          method: 'POST',
          headers: { authorization: this.options.authorization, 'content-type': 'application/json', accept: 'application/json' },
          body,
          timeoutMs: this.options.longPollTimeoutMs,
          // Up to maxEvents SETs, each of up to a thousand revocations merged (docs/events.md).
          maxBytes: 64 << 20,
          signal: this.abort.signal,
        });
        const answer = replyJson(reply, 'poll') as { sets?: Record<string, string>; moreAvailable?: boolean; err?: string };
        if (reply.status !== 200 || typeof answer.sets !== 'object' || answer.sets === null) {
          throw new Error(`poll: HTTP ${reply.status}${answer.err ? ` ${answer.err}` : ''}`);
        }
        ack = [];
        setErrs = {};
        let allVerified = true;
        for (const [jti, jws] of Object.entries(answer.sets)) {
          try {
            const set = await this.options.verifier.verify(jws);
            if (set.jti !== jti) throw new SetRejected('invalid_request', 'the SET jti differs from its key in sets');
            this.options.apply(set);
            ack.push(jti);
          } catch (error) {
            allVerified = false;
            if (error instanceof SetRejected) setErrs[jti] = { err: error.err, description: error.message };
            this.options.onError(error instanceof Error ? error : new Error(String(error)));
          }
        }
        this.setUp(allVerified);
        immediate = answer.moreAvailable === true;
        delay = 0;
        // A SET that could not be verified comes back on the next poll: not in a tight loop.
        if (!allVerified) await this.options.clock.sleep(1000, this.abort.signal);
      } catch (error) {
        if (this.stopped) break;
        this.setUp(false);
        this.options.onError(error instanceof Error ? error : new Error(String(error)));
        delay = Math.min(5000, Math.max(250, delay * 2));
        await this.options.clock.sleep(delay / 2 + Math.random() * (delay / 2), this.abort.signal);
      }
    }
    this.setUp(false);
  }

  private setUp(up: boolean): void {
    if (up !== this.up) {
      this.up = up;
      this.options.onState(up);
    }
  }
}
