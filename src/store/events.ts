/**
 * Security events (issue 18): what a revocation tells the resource servers, kept in the store as
 * an outbox, and the receivers it is delivered to.
 *
 * A revocation that changed something writes its event in its own transaction, with one delivery
 * per registered receiver (fan-out at write time: no dispatcher, nothing to lose between the
 * revocation and the outbox). With no receiver registered nothing is written at all: events cost
 * nothing until somebody listens. A delivery stays until it is delivered (push: the receiver
 * answered 202; poll: the receiver acknowledged it) or the operator removes the receiver.
 *
 * Stores only keep and hand out what they are given: signing (JWS), HTTP and the retry policy
 * live in `src/events/`. All times are integer milliseconds since the Unix epoch.
 */

import type { AuditEntry } from './audit.js';

/** Why tokens were revoked. */
export type RevocationReason =
  /** A client (RFC 7009) or an operator (`tokenctl revoke`) asked. */
  | 'revoked'
  /** A replaced refresh token was presented again (RFC 9700 §4.14.2): its grant ended. */
  | 'reuse_detected'
  /** The client was deleted, and every token issued to it with it. */
  | 'client_deleted';

/**
 * What one revocation covers. A receiver drops every cached answer the event covers:
 * - `token`: the token `jti` (an access token; a refresh token's grant is `grant`);
 * - `grant`: every token of grant `grantId`. Introspection answers do not name the grant (spec
 *   2.3), so a receiver drops the answers of `username` at `clientId`: a superset, never less;
 * - `user`: every token of `username` (at `clientId` only, when it is set);
 * - `client`: every token of `clientId`.
 */
export type RevocationScope = 'token' | 'grant' | 'user' | 'client';

/** The content of one Security Event Token before it is signed: what the engine hands the store. */
export interface RevocationEvent {
  /** The event's id, the SET's `jti`: a UUID v7 made by the engine. Unique. */
  id: string;
  /** When the revocation took effect (ms). */
  at: number;
  reason: RevocationReason;
  scope: RevocationScope;
  /** The token presented or named (`token`, and `grant` when a token led to it). */
  jti?: string;
  /** The type of `jti`: `access_token` or `refresh_token` (store.ts TokenType; not imported, to keep events.ts a leaf). */
  tokenType?: 'access_token' | 'refresh_token';
  /** Set for `token` and `grant`. */
  grantId?: string;
  /** Set for `token`, `grant` and `user`. */
  username?: string;
  /** Set for every scope but `user` without a client. */
  clientId?: string;
}

/** How a receiver gets its events. */
export type DeliveryMethod =
  /** RFC 8935: tokenctl POSTs each SET to the receiver's endpoint. */
  | 'push'
  /** RFC 8936: the receiver POSTs to tokenctl's poll endpoint, authenticated as client `clientId`. */
  | 'poll';

/** A registered receiver (`tokenctl receiver add`). */
export interface ReceiverRecord {
  /** A name the operator chose: letters, digits, `.`, `_`, `-`. */
  id: string;
  delivery: DeliveryMethod;
  /** push: the receiver's https:// endpoint; poll: null. */
  endpointUrl: string | null;
  /**
   * push: the value of the `Authorization` header sent with each SET (a credential of the
   * receiver's, never printed back), or null for none; poll: null.
   */
  authorization: string | null;
  /** push: PEM of a CA to trust for the endpoint's certificate besides the system's, or null. */
  caPem: string | null;
  /** poll: the registered client the receiver authenticates as; push: null. */
  clientId: string | null;
  /** The SETs' `aud` for this receiver. */
  audience: string;
  createdAt: number;
}

/** A receiver and how its deliveries stand, for `tokenctl receiver list`. */
export interface ReceiverStatus extends ReceiverRecord {
  /** Deliveries waiting (push: to be sent or retried; poll: not yet acknowledged). */
  pending: number;
  /** Push deliveries given up on after their retries (the dead letters). */
  dead: number;
  /** When the oldest pending delivery's event happened, or null. */
  oldestPendingAt: number | null;
  /** The last error of a push delivery (what the receiver answered, or why it could not be reached), or null. */
  lastError: string | null;
  /** When a delivery to it last succeeded, or null. */
  lastDeliveredAt: number | null;
}

/**
 * What one receiver is due: one SET's worth of events. A store may put the events of revocations
 * that committed together (one group commit) in one delivery, so that a burst of revocations costs
 * one outbox row, one signature and one acknowledgement per receiver, not one per revocation. Every
 * event is in exactly one delivery per receiver; a delivery's events are in commit order.
 */
export interface Delivery {
  receiverId: string;
  /**
   * The delivery's id, the SET's `jti`: the id of its first event, or, for deliveries a store
   * merged (see {@link EventStore.pendingDeliveries}), an id of the store's making. What settles
   * and acks name.
   */
  id: string;
  /** The revocations it tells of, oldest first: at least one. */
  events: RevocationEvent[];
  /** Failed attempts so far (push). */
  attempts: number;
}

/**
 * One revocation as a SET tells it (events/set.ts): an event's members but its id, snake_case,
 * less what goes without saying (docs/events.md "The SET"): `reason` only when it is not
 * `revoked`, and `token_type` only when `scope` does not say it (a `token` event is always of an
 * access token: a refresh token's revocation ends its grant). A SET under load carries a thousand
 * of these, and every byte of them is written to the outbox, read back, encoded, hashed and sent
 * (bench/PERF-LOG.md 37). Here, beside the event, so that a store can keep events in this form
 * (see {@link PreparedRevocations}).
 */
export interface RevocationClaim {
  scope: RevocationEvent['scope'];
  /** Absent: `revoked`. */
  reason?: RevocationEvent['reason'];
  jti?: string;
  /** Absent on a `token` event: `access_token`. */
  token_type?: string;
  grant_id?: string;
  username?: string;
  client_id?: string;
  /** When it took effect (ms). */
  at: number;
}

/** The reason a claim leaves out. */
const USUAL_REASON: RevocationReason = 'revoked';
/** Whether a claim leaves the event's token type out: the one a `token` event always has. */
const typeGoesWithoutSaying = (event: RevocationEvent): boolean => event.scope === 'token' && event.tokenType === 'access_token';

/** An event as its {@link RevocationClaim}. */
export function revocationClaim(event: RevocationEvent): RevocationClaim {
  // One object literal of one shape for every event (a SET of a thousand revocations builds a
  // thousand): the members an event lacks are undefined here, and JSON leaves them out.
  return {
    scope: event.scope,
    reason: event.reason === USUAL_REASON ? undefined : event.reason,
    jti: event.jti,
    token_type: typeGoesWithoutSaying(event) ? undefined : event.tokenType,
    grant_id: event.grantId,
    username: event.username,
    client_id: event.clientId,
    at: event.at,
  };
}

/** The strings JSON writes as they are between quotes: printable ASCII but `"` and `\`. */
const VERBATIM = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;
/** `JSON.stringify(s)`, the same text; a string JSON writes as it is just goes between quotes. */
export const jsonString = (s: string): string => (VERBATIM.test(s) ? `"${s}"` : JSON.stringify(s));

/**
 * `JSON.stringify(revocationClaim(event))`, the same text, written directly: the one writer of a
 * revocation's JSON, for the SQLite store (one per revocation inside its commit) and for the SET
 * writer (events/set.ts). It costs half of what building the object and stringifying it does
 * (bench/PERF-LOG.md 37); a test holds the two to the same text.
 */
export function revocationClaimJson(event: RevocationEvent): string {
  let json = `{"scope":${jsonString(event.scope)}`;
  if (event.reason !== USUAL_REASON && event.reason !== undefined) json += `,"reason":${jsonString(event.reason)}`;
  if (event.jti !== undefined) json += `,"jti":${jsonString(event.jti)}`;
  if (event.tokenType !== undefined && !typeGoesWithoutSaying(event)) json += `,"token_type":${jsonString(event.tokenType)}`;
  if (event.grantId !== undefined) json += `,"grant_id":${jsonString(event.grantId)}`;
  if (event.username !== undefined) json += `,"username":${jsonString(event.username)}`;
  if (event.clientId !== undefined) json += `,"client_id":${jsonString(event.clientId)}`;
  return `${json},"at":${Number.isFinite(event.at) ? event.at : null}}`;
}

/** The time of the latest of `events` (ms): a SET's `toe`, an outbox row's second line. */
export function latestAtOf(events: readonly RevocationEvent[]): number {
  let latest = -Infinity;
  for (const e of events) if (e.at > latest) latest = e.at;
  return latest;
}

/** The event of a {@link RevocationClaim} and its id. */
export function eventOfClaim(id: string, c: RevocationClaim): RevocationEvent {
  const e: RevocationEvent = { id, at: c.at, reason: c.reason ?? USUAL_REASON, scope: c.scope };
  if (c.jti !== undefined) e.jti = c.jti;
  if (c.token_type !== undefined) e.tokenType = c.token_type as RevocationEvent['tokenType'];
  else if (c.scope === 'token') e.tokenType = 'access_token';
  if (c.grant_id !== undefined) e.grantId = c.grant_id;
  if (c.username !== undefined) e.username = c.username;
  if (c.client_id !== undefined) e.clientId = c.client_id;
  return e;
}

/**
 * A delivery's revocations as a store that keeps them as text hands them out: the JSON of their
 * {@link RevocationClaim}s, ready to go into a SET without being parsed and written again (a poll
 * answer carries hundreds of revocations under load; that round trip was the largest part of what
 * it cost). Carried by the delivery out of sight ({@link preparedRevocations}): what a delivery is
 * stays its id, events and attempts.
 */
export interface PreparedRevocations {
  /**
   * The revocations' claims, JSON objects separated by commas, oldest first, in pieces (a store's
   * rows): joined by commas, the pieces are the list. Kept apart, a SET's writer copies each piece
   * where it goes, with no string of them all. As UTF-8 bytes, as the store read them: no string
   * of a row is made (bench/PERF-LOG.md 43).
   */
  parts: readonly Uint8Array[];
  /** How many. */
  count: number;
  /** The latest revocation's time (ms). */
  latestAt: number;
}

const PREPARED = Symbol('prepared revocations');

/** Gives `delivery` its prepared revocations (a property that is not enumerable: equality, JSON and copies ignore it). */
export function withPreparedRevocations<D extends object>(delivery: D, prepared: PreparedRevocations): D {
  Object.defineProperty(delivery, PREPARED, { value: prepared, enumerable: false });
  return delivery;
}

/** The prepared revocations a store gave `delivery`, if any. */
export function preparedRevocations(delivery: object): PreparedRevocations | undefined {
  return (delivery as { [PREPARED]?: PreparedRevocations })[PREPARED];
}

/** What became of one push delivery. */
export type DeliveryOutcome =
  /** The receiver took it (202): the delivery is gone. */
  | { kind: 'delivered'; at: number }
  /** It failed and is tried again at `retryAt`; the receiver's later events wait behind it. */
  | { kind: 'retry'; at: number; retryAt: number; error: string }
  /** Given up on: kept as a dead letter, visible in `receiver list`, requeued by `receiver retry`. */
  | { kind: 'dead'; at: number; error: string };

/** A push receiver leased to one deliverer, with its next deliveries in event order. */
export interface ClaimedReceiver {
  receiver: ReceiverRecord;
  /** The receiver's oldest pending deliveries, oldest first; the first is due. */
  deliveries: Delivery[];
}

/** A key tokenctl signs events with (ES256 by default). */
export interface SigningKeyRecord {
  /** The JWK `kid`. */
  kid: string;
  /** The JWS `alg`, e.g. `ES256`. */
  alg: string;
  /** The private key as a JWK, JSON. Never printed, never served. */
  privateJwk: string;
  /** The public key as a JWK, JSON: what the JWKS publishes. */
  publicJwk: string;
  createdAt: number;
  /** When a newer key replaced it (it stays in the JWKS a while, for SETs signed before), or null: current. */
  retiredAt: number | null;
}

/**
 * The outbox and its receivers: part of every {@link TokenStore}. Safe to use from several
 * processes and nodes at once: a push receiver is leased to one deliverer at a time.
 *
 * Events are written by the revocation methods of TokenStore themselves (their `event`
 * argument), never by a separate call: the event commits with the revocation or not at all.
 */
export interface EventStore {
  /**
   * Registers a receiver. Rejects with {@link DuplicateReceiverError} if the id exists. With
   * `audit` (here, in deleteReceiver and in retryDead), that line is written in the same
   * transaction, when the call changed something (retryDead: always, its count how many).
   */
  createReceiver(receiver: ReceiverRecord, audit?: AuditEntry): Promise<void>;
  getReceiver(id: string): Promise<ReceiverRecord | null>;
  /** The poll receiver that client `clientId` polls as, or null (at most one per client). */
  findPollReceiver(clientId: string): Promise<ReceiverRecord | null>;
  /** Every receiver with its delivery counts, by id. */
  listReceivers(): Promise<ReceiverStatus[]>;
  /** Removes a receiver and its pending and dead deliveries. False if there was none. */
  deleteReceiver(id: string, audit?: AuditEntry): Promise<boolean>;

  /**
   * Push: leases up to `limit` push receivers whose oldest pending delivery is due at `now` and
   * that no one else holds (no lease, or one that ended before `now`), to `owner` until
   * `now + leaseMs`, each with up to `perReceiver` of its oldest pending deliveries, in event
   * order. Of several processes calling at once, each receiver goes to one.
   */
  claimPushReceivers(owner: string, now: number, leaseMs: number, limit: number, perReceiver: number): Promise<ClaimedReceiver[]>;
  /** Records what became of one push delivery by the lease holder `owner` (ignored if the lease moved on). */
  settleDelivery(owner: string, receiverId: string, deliveryId: string, outcome: DeliveryOutcome): Promise<void>;
  /** Ends `owner`'s lease of a receiver early, so that its next due delivery goes out at once. */
  releaseReceiver(owner: string, receiverId: string): Promise<void>;
  /** Requeues a receiver's dead letters, due at `now`, attempts reset. Returns how many. */
  retryDead(receiverId: string, now: number, audit?: AuditEntry): Promise<number>;

  /**
   * Poll (RFC 8936): the receiver's pending deliveries, oldest first, at most `limit`. With
   * `mergeUpTo`, a store that can may hand out consecutive pending deliveries as ONE delivery of
   * up to that many events (more when one delivery alone holds more), so that a poll answer is one
   * SET, one signature; its id is then the store's own, acknowledged as one, and never a
   * delivery it did not hold. A store that cannot (events that commit out of order) ignores it.
   */
  pendingDeliveries(receiverId: string, limit: number, mergeUpTo?: number): Promise<Delivery[]>;
  /** Poll: acknowledges these deliveries by id (RFC 8936 `ack` of their SETs): they are gone. Unknown ids are ignored. Returns how many. */
  ackDeliveries(receiverId: string, deliveryIds: readonly string[], at: number): Promise<number>;

  /** Deletes up to `limit` events no delivery refers to any more. Returns how many. */
  purgeDeliveredEvents(limit: number): Promise<number>;

  /** Every signing key, newest first. */
  listSigningKeys(): Promise<SigningKeyRecord[]>;
  /**
   * Adds `key` as the current key and retires the previous current one at `key.createdAt`, in one
   * transaction. With `ifCurrent`, only when the current key is that kid (a rotation because it is
   * old, by several nodes at once: one wins), or with null only when there is none (start-up of
   * several nodes at once: one key wins). With `audit`, that line is appended in the same
   * transaction when the key is added: a rotation and its audit line commit together or not at
   * all. Returns false when it did nothing.
   */
  addSigningKey(key: SigningKeyRecord, ifCurrent?: string | null, audit?: AuditEntry): Promise<boolean>;
  /** Deletes keys retired before `before` (they are out of the JWKS). Returns how many. */
  deleteRetiredKeys(before: number): Promise<number>;
}

/** A receiver with this id exists already. */
export class DuplicateReceiverError extends Error {
  constructor(readonly receiverId: string) {
    super(`a receiver with id "${receiverId}" already exists`);
    this.name = 'DuplicateReceiverError';
  }
}
