/**
 * Security events (docs/events.md): what a revocation tells the resource servers, kept in the store as
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
  /** The type of `jti`: `access_token` or `refresh_token` (store.ts TokenType; not imported, to keep event-records.ts a leaf). */
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
  /**
   * The SSF stream settings (engine/streams.ts: events requested, signing algorithm, status, the
   * client that manages it), JSON kept as the engine wrote it; null or absent: the defaults.
   */
  stream?: string | null;
  /**
   * How long a delivery may stay pending (ms, from its event's time): older ones become dead
   * letters in housekeeping ({@link OutboxStore.expireDeliveries}), poll and push alike, so that
   * a receiver that stopped taking its events cannot grow the outbox without bound.
   */
  retentionMs: number;
}

/**
 * What one update of a receiver changes (an SSF stream update, engine/streams.ts; `receiver
 * update`): the fields it names, in one transaction with its trail, so that a change of several
 * is made whole or not at all. A field left out (undefined) keeps its value; null is a value.
 */
/**
 * What `updateReceiver` changes. `ifStream`, when given, makes it a conditional write: only if the
 * receiver's stream settings are still exactly that JSON (null: none), so that a read-modify-write
 * of the settings never writes over a change made since its read; otherwise nothing is written.
 */
export type ReceiverChange = Partial<Pick<ReceiverRecord, 'endpointUrl' | 'authorization' | 'stream' | 'retentionMs'>> & { ifStream?: string | null };

/**
 * Whether a receiver's stream settings (their JSON) say the stream is paused (SSF 1.0 §8.1.2: its
 * events are held): a push claim passes over such a receiver, its deliveries staying pending until
 * it is enabled again or its retention makes them dead letters. The settings' top-level `status`
 * is exactly `"paused"`; null, a value that does not parse, or anything else is not paused. The SQL
 * stores keep the same test as a generated column of the JSON (`receivers.paused`), so a node that
 * writes only the JSON keeps it right.
 */
export function isPausedStream(stream: string | null | undefined): boolean {
  if (!stream) return false;
  try {
    const parsed: unknown = JSON.parse(stream);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) && (parsed as { status?: unknown }).status === 'paused';
  } catch {
    return false;
  }
}

/** A receiver's retention unless the operator sets one (`receiver add --retention`): 24 hours. */
export const DEFAULT_RETENTION_MS = 24 * 3_600_000;

/** The last error of a delivery dead-lettered by its receiver's retention. */
export const RETENTION_ERROR = 'pending longer than the receiver\'s retention: dead letter';

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

/** A receiver with this id exists already. */
export class DuplicateReceiverError extends Error {
  constructor(readonly receiverId: string) {
    super(`a receiver with id "${receiverId}" already exists`);
    this.name = 'DuplicateReceiverError';
  }
}
