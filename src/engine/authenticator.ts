import { performance } from 'node:perf_hooks';
import type { ClientRecord, TokenRecord, TokenStore } from '../store/store.js';
import { isPlausibleClientId, type PresentedCredentials } from './client-auth.js';
import { InvalidClientError, TooManyAttemptsError } from './errors.js';
import { FailureBudget, sourceKey, type BudgetLimits } from './failure-budget.js';
import { FairLimiter } from './fair-limiter.js';
import { getDummyHash, verifySecret } from './secrets.js';
import { sha256 } from './tokens.js';

export interface AuthenticatorOptions {
  /** Password hashes computed at once (each takes ~16 MiB and tens of ms). Default 2. */
  maxConcurrentHashes?: number;
  /** Hashes one client may have waiting. Default 8. */
  maxQueuedPerClient?: number;
  /** Hashes all clients together may have waiting. Default 256. */
  maxQueued?: number;
  /** Verified (and refused) presentations remembered. Default 10,000 each. */
  cacheSize?: number;
  /**
   * Failed password checks (each one a hash) allowed before new passwords are refused with
   * {@link TooManyAttemptsError}, without a hash: per source address and client id
   * (default 30 at once, 30 a minute), per source address (100, 120 a minute), and per client id
   * (60, 120 a minute; only sources that have failed for that client id are then refused).
   */
  failures?: { perSourceAndClient?: BudgetLimits; perSource?: BudgetLimits; perClient?: BudgetLimits };
  /** Milliseconds of a monotonic clock, for the failure budgets. Default `performance.now`. */
  now?: () => number;
}

/** Key of presentations for client ids that do not exist: they share one fair-queue lane. */
const UNKNOWN_LANE = '\u0000unknown';

/** Where a presentation came from, for the failure budgets: a network address, or none (the CLI). */
export type Source = string | undefined;

/**
 * Authenticates clients (spec part 5) without paying a slow hash on every request.
 *
 * A verified presentation is remembered together with the secret hash it was verified against;
 * the client's row is read from the store on every request and the memory counts only while
 * that row still holds the same hash. Rotating the secret or deleting the client, from this
 * process or any other, ends it at once. Refused presentations are remembered the same way, so
 * repeating one wrong password costs no hash. Hashing itself goes through a {@link FairLimiter}.
 *
 * Failures take the same work whether or not the client exists (a hash per candidate password),
 * so that timing does not tell which client ids exist.
 *
 * Brute force (RFC 6749 §2.3.1) is throttled without locking the owner out. A presentation
 * already verified is answered from memory and never throttled. A new password from a network
 * source is checked against {@link FailureBudget}s of failed hashes, kept per source address,
 * per client id and per pair, keyed by the id presented whether it exists or not: a pair
 * (source, id) past its budget, a source past its own (whatever id it presents, made-up ones
 * included), or a pair that has failed before while its client id is past its budget, is refused
 * at once with {@link TooManyAttemptsError}, no hash paid. A source with no failure for that id
 * (the owner, as far as can be told) is still heard while the id is flooded, and its hash runs
 * before the flood's.
 */
export class ClientAuthenticator {
  private readonly limiter: FairLimiter;
  private readonly accepted: BoundedMap;
  private readonly refused: BoundedMap;
  /** Verifications under way, by presentation and stored hash: identical ones wait for the first. */
  private readonly inFlight = new Map<string, Promise<boolean>>();
  private readonly pairs: FailureBudget;
  private readonly sources: FailureBudget;
  private readonly clients: FailureBudget;

  constructor(
    private readonly store: TokenStore,
    options: AuthenticatorOptions = {},
  ) {
    this.limiter = new FairLimiter(options.maxConcurrentHashes ?? 2, options.maxQueuedPerClient ?? 8, options.maxQueued ?? 256);
    this.accepted = new BoundedMap(options.cacheSize ?? 10_000);
    this.refused = new BoundedMap(options.cacheSize ?? 10_000);
    const now = options.now ?? (() => performance.now());
    const f = options.failures ?? {};
    this.pairs = new FailureBudget(f.perSourceAndClient ?? { burst: 30, perMinute: 30 }, now);
    this.sources = new FailureBudget(f.perSource ?? { burst: 100, perMinute: 120 }, now);
    this.clients = new FailureBudget(f.perClient ?? { burst: 60, perMinute: 120 }, now);
  }

  /**
   * Returns the authenticated client, or throws {@link InvalidClientError}, or
   * {@link TooManyAttemptsError} when `source` (a network address) is past its failure budget.
   */
  async authenticate(presented: PresentedCredentials, source?: Source): Promise<ClientRecord> {
    this.checkPlausible(presented);
    return this.authenticateAgainst(presented, await this.store.getClient(presented.clientId), source);
  }

  /**
   * Authenticates and reads the token with `digest` (null: none) in one store read; the token is
   * handed over only to a client the credentials prove.
   */
  async authenticateAndFind(presented: PresentedCredentials, digest: string | null, source?: Source): Promise<{ client: ClientRecord; token: TokenRecord | null }> {
    this.checkPlausible(presented);
    const found = await this.store.findClientAndToken(presented.clientId, digest);
    return { client: await this.authenticateAgainst(presented, found.client, source), token: found.token };
  }

  private checkPlausible({ clientId }: PresentedCredentials): void {
    if (!isPlausibleClientId(clientId)) throw new InvalidClientError(clientId.slice(0, 200), 'unknown_client');
  }

  /** The rest of authenticate, on the client row as just read from the store (null: no such client). */
  private async authenticateAgainst(presented: PresentedCredentials, client: ClientRecord | null, source: Source): Promise<ClientRecord> {
    const { clientId, secrets } = presented;
    const storedHash = client?.secretHash ?? null;

    if (secrets.length === 0) {
      // Scenario II: only a public client may present no password.
      if (client && storedHash === null) return client;
      throw new InvalidClientError(clientId, client ? 'no_secret' : 'unknown_client');
    }
    if (client && storedHash !== null) {
      if (await this.verifyAny(clientId, clientId, source, secrets, storedHash)) return client;
      throw new InvalidClientError(clientId);
    }
    // Unknown client, or a public client that sent a password: refuse after the same work.
    await this.verifyAny(client ? clientId : UNKNOWN_LANE, clientId, source, secrets, '\u0000none:' + clientId);
    throw new InvalidClientError(clientId, client ? 'unexpected_secret' : 'unknown_client');
  }

  private async verifyAny(lane: string, clientId: string, source: Source, secrets: string[], storedHash: string): Promise<boolean> {
    const keys = secrets.map((secret) => cacheKey(lane, secret));
    if (keys.some((key) => this.accepted.get(key) === storedHash)) return true;
    if (keys.every((key) => this.refused.get(key) === storedHash)) return false;
    const priority = this.admit(clientId, source);

    // A burst of requests with the same credentials (a client's pool of connections opening at
    // once) costs one hash, not one each: the others take the first one's outcome. Besides the
    // CPU, every scrypt holds a 16 MiB buffer on a libuv thread, which glibc then keeps.
    const flightKey = keys.join('\u0000') + '\u0001' + storedHash;
    let flight = this.inFlight.get(flightKey);
    if (flight === undefined) {
      // Charged as a failure at once, so that attempts still waiting for a hash count against
      // the budgets; given back if the password was right.
      this.recordFailure(clientId, source, 'fail');
      flight = this.verifyNow(lane, secrets, keys, storedHash, priority)
        .then((ok) => {
          if (ok) this.recordFailure(clientId, source, 'refund');
          return ok;
        })
        .finally(() => this.inFlight.delete(flightKey));
      this.inFlight.set(flightKey, flight);
    }
    return flight;
  }

  /**
   * Whether a new password from `source` for `clientId` may be hashed, and if so whether first
   * (true: this source has no failure for this id). Throws {@link TooManyAttemptsError}
   * otherwise. Decided on the presented id alone, never on whether such a client exists.
   *
   * A source past its own budget is refused for every id, also one it never tried: each made-up
   * id is a pair without failures, so otherwise a new id per request bought a hash each without
   * limit. Refusing only unknown ids would tell which ids exist, so known ones are refused alike.
   */
  private admit(clientId: string, source: Source): boolean {
    if (source === undefined) return false;
    const from = sourceKey(source);
    const pair = from + '\u0000' + clientId;
    if (this.pairs.exhausted(pair)) throw new TooManyAttemptsError(this.pairs.retryAfterSeconds(pair));
    if (this.sources.exhausted(from)) throw new TooManyAttemptsError(this.sources.retryAfterSeconds(from));
    if (this.pairs.level(pair) === 0) return true;
    if (this.clients.exhausted(clientId)) throw new TooManyAttemptsError(this.clients.retryAfterSeconds(clientId));
    return false;
  }

  private recordFailure(clientId: string, source: Source, how: 'fail' | 'refund'): void {
    if (source === undefined) return;
    const from = sourceKey(source);
    this.pairs[how](from + '\u0000' + clientId);
    this.sources[how](from);
    this.clients[how](clientId);
  }

  private async verifyNow(lane: string, secrets: string[], keys: string[], storedHash: string, priority: boolean): Promise<boolean> {
    const realHash = storedHash.startsWith('\u0000') ? await getDummyHash() : storedHash;
    for (const [i, secret] of secrets.entries()) {
      const ok = await this.limiter.run(lane, () => verifySecret(secret, realHash), priority);
      if (ok && realHash === storedHash) {
        this.accepted.set(keys[i]!, storedHash);
        return true;
      }
    }
    for (const key of keys) this.refused.set(key, storedHash);
    return false;
  }
}

function cacheKey(lane: string, secret: string): string {
  return lane + '\u0000' + sha256(secret);
}

/** A Map that forgets its oldest entries past `limit`. */
class BoundedMap {
  private readonly map = new Map<string, string>();
  constructor(private readonly limit: number) {}
  get(key: string): string | undefined {
    return this.map.get(key);
  }
  set(key: string, value: string): void {
    this.map.delete(key);
    this.map.set(key, value);
    if (this.map.size > this.limit) this.map.delete(this.map.keys().next().value!);
  }
}
