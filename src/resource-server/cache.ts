/**
 * The resource server's cache of introspection answers (RFC 7662), keyed by a digest of the token
 * (the token itself is never kept), bounded in time (the token's `exp`, a maximum age, a short
 * life for inactive answers) and in entries (least recently used first out), and emptied of every
 * answer a security event covers.
 */

/** An introspection answer (spec 2.3, RFC 7662 §2.2). */
export interface IntrospectionAnswer {
  active: boolean;
  scope?: string;
  client_id?: string;
  username?: string;
  token_type?: string;
  exp?: number;
  iat?: number;
  nbf?: number;
  sub?: string;
  /** RFC 7662 §2.2: a string, or an array of them. */
  aud?: string | string[];
  iss?: string;
  jti?: string;
  /** RFC 7800 §3.1, RFC 9449 §6.2: the key a DPoP-bound token is bound to, by its RFC 7638 thumbprint. */
  cnf?: { jkt?: string };
}

/** One revocation of a `tokens-revoked` SET (its `revocations`), as the SET carries it: what it covers (docs/events.md). */
export interface RevokedTokens {
  scope: 'token' | 'grant' | 'user' | 'client';
  /** Absent: `revoked` (tokenctl leaves the usual reason out). */
  reason?: string;
  jti?: string;
  /** The type of `jti`; absent on a `token` event, whose `jti` is always an access token's. */
  token_type?: string;
  grant_id?: string;
  username?: string;
  client_id?: string;
  /** When it took effect (ms). */
  at?: number;
}

/**
 * Whether an event covers an answer. Introspection answers do not name the grant (spec 2.3), so a
 * `grant` event drops its token and every answer of its user at its client: a superset, never less.
 * An event missing the member its scope needs covers everything (never less than asked).
 */
export function covers(event: RevokedTokens, answer: IntrospectionAnswer): boolean {
  switch (event.scope) {
    case 'token':
      return event.jti === undefined || answer.jti === event.jti;
    case 'grant':
      if (event.jti !== undefined && answer.jti === event.jti) return true;
      if (event.username === undefined || event.client_id === undefined) return event.jti === undefined;
      return answer.username === event.username && answer.client_id === event.client_id;
    case 'user':
      if (event.username === undefined) return true;
      return answer.username === event.username && (event.client_id === undefined || answer.client_id === event.client_id);
    case 'client':
      return event.client_id === undefined || answer.client_id === event.client_id;
    default:
      return true; // a scope this version does not know: drop everything rather than keep a revoked answer
  }
}

interface Entry {
  answer: IntrospectionAnswer;
  /** When the introspection that produced it started (ms): what its age counts from. */
  askedAt: number;
  /** When it stops being served (ms). */
  expiresAt: number;
}

export interface AnswerCacheOptions {
  /** At most this many answers (least recently used dropped first). */
  maxEntries: number;
  /** An active answer is kept at most this long (ms), and never past the token's `exp`. */
  maxAgeMs: number;
  /** An inactive answer is kept this long (ms). */
  inactiveTtlMs: number;
}

export class AnswerCache {
  /** Map order is use order: the first key is the least recently used. */
  private readonly entries = new Map<string, Entry>();
  /** Active answers by jti, username and client: an event finds what it covers without a scan. */
  private readonly byJti = new Map<string, Set<string>>();
  private readonly byUser = new Map<string, Set<string>>();
  private readonly byClient = new Map<string, Set<string>>();

  constructor(private readonly options: AnswerCacheOptions) {}

  get size(): number {
    return this.entries.size;
  }

  /**
   * The answer for `key`, if it is still good at `now` and was asked for no earlier than
   * `notAskedBefore` (how the fallback shortens every entry's life while the events are down).
   */
  get(key: string, now: number, notAskedBefore = -Infinity): IntrospectionAnswer | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= now) {
      this.remove(key);
      return undefined;
    }
    if (entry.askedAt < notAskedBefore) return undefined;
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.answer;
  }

  /** Keeps `answer` (asked for at `askedAt`) for as long as the options and the token allow, capped at `capMs` when given. */
  set(key: string, answer: IntrospectionAnswer, askedAt: number, capMs = Infinity): void {
    const ttl = Math.min(answer.active ? this.options.maxAgeMs : this.options.inactiveTtlMs, capMs);
    let expiresAt = askedAt + ttl;
    if (answer.active && typeof answer.exp === 'number') expiresAt = Math.min(expiresAt, answer.exp * 1000);
    if (expiresAt <= askedAt || this.options.maxEntries <= 0) return;
    this.remove(key);
    this.entries.set(key, { answer, askedAt, expiresAt });
    if (answer.active) {
      if (answer.jti !== undefined) index(this.byJti, answer.jti).add(key);
      if (answer.username !== undefined) index(this.byUser, answer.username).add(key);
      if (answer.client_id !== undefined) index(this.byClient, answer.client_id).add(key);
    }
    while (this.entries.size > this.options.maxEntries) this.remove(this.entries.keys().next().value as string);
  }

  /** Drops every active answer `event` covers; returns how many. Inactive answers stay inactive. */
  drop(event: RevokedTokens): number {
    let candidates: Iterable<string>;
    const one = event.jti !== undefined ? [...(this.byJti.get(event.jti) ?? [])] : [];
    if (event.scope === 'token' && event.jti !== undefined) candidates = one;
    else if (event.scope === 'grant' && event.username !== undefined && event.client_id !== undefined) candidates = [...one, ...(this.byUser.get(event.username) ?? [])];
    else if (event.scope === 'grant' && event.jti !== undefined) candidates = one;
    else if (event.scope === 'user' && event.username !== undefined) candidates = [...(this.byUser.get(event.username) ?? [])];
    else if (event.scope === 'client' && event.client_id !== undefined) candidates = [...(this.byClient.get(event.client_id) ?? [])];
    else candidates = [...this.entries.keys()]; // an event lacking what its scope needs, or a scope not known: look at everything
    let n = 0;
    for (const key of candidates) {
      const entry = this.entries.get(key);
      if (entry && entry.answer.active && covers(event, entry.answer)) {
        this.remove(key);
        n++;
      }
    }
    return n;
  }

  clear(): void {
    this.entries.clear();
    this.byJti.clear();
    this.byUser.clear();
    this.byClient.clear();
  }

  private remove(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    const { jti, username, client_id } = entry.answer;
    if (jti !== undefined) unindex(this.byJti, jti, key);
    if (username !== undefined) unindex(this.byUser, username, key);
    if (client_id !== undefined) unindex(this.byClient, client_id, key);
  }
}

function index(map: Map<string, Set<string>>, name: string): Set<string> {
  let keys = map.get(name);
  if (!keys) map.set(name, (keys = new Set()));
  return keys;
}

function unindex(map: Map<string, Set<string>>, name: string, key: string): void {
  const keys = map.get(name);
  if (keys?.delete(key) && keys.size === 0) map.delete(name);
}
