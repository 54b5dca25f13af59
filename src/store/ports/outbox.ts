import type { Trail } from '../trail.js';
import type { ClaimedReceiver, Delivery, DeliveryOutcome, ReceiverChange, ReceiverRecord, ReceiverStatus, RevocationEvent } from '../event-records.js';

/**
 * The outbox of security events and its receivers: push (RFC 8935) and poll (RFC 8936). Safe to
 * use from several processes and nodes at once: a push receiver is leased to one deliverer at a
 * time. Events are written by the revocations themselves (the event of their {@link Trail}), never by a
 * separate call: the event commits with the revocation or not at all (docs/events.md).
 */
export interface OutboxStore {
  /**
   * Registers a receiver. Rejects with {@link DuplicateReceiverError} if the id exists. With
   * `audit` (here, in deleteReceiver and in retryDead), that line is written in the same
   * transaction, when the call changed something (retryDead: always, its count how many).
   */
  createReceiver(receiver: ReceiverRecord, trail: Trail): Promise<void>;
  getReceiver(id: string): Promise<ReceiverRecord | null>;
  /** The poll receiver that client `clientId` polls as, or null (at most one per client). */
  findPollReceiver(clientId: string): Promise<ReceiverRecord | null>;
  /** Every receiver with its delivery counts, by id. */
  listReceivers(): Promise<ReceiverStatus[]>;
  /**
   * Changes what `change` names of a receiver (its endpoint, Authorization value, stream settings,
   * retention), all of it with the trail's audit line in one transaction: a failure leaves the
   * receiver as it was. False if there was none, or if `change.ifStream` is given and the
   * receiver's stream settings are no longer exactly that (nothing written). Its deliveries stay.
   */
  updateReceiver(id: string, change: ReceiverChange, trail: Trail): Promise<boolean>;
  /** Removes a receiver and its pending and dead deliveries. False if there was none. */
  deleteReceiver(id: string, trail: Trail): Promise<boolean>;

  /**
   * Push: leases up to `limit` push receivers whose oldest pending delivery is due at `now` and
   * that no one else holds (no lease, or one that ended before `now`), to `owner` until
   * `now + leaseMs`, each with up to `perReceiver` of its oldest pending deliveries, in event
   * order. Of several processes calling at once, each receiver goes to one. With `mergeUpTo`, a
   * store that can may hand out consecutive pending deliveries as ONE delivery of up to that many
   * events (one SET), its id of the store's making, settled by its events' ids; it may then read
   * fewer than `perReceiver` such deliveries at a time (a bounded read).
   */
  claimPushReceivers(owner: string, now: number, leaseMs: number, limit: number, perReceiver: number, mergeUpTo?: number): Promise<ClaimedReceiver[]>;
  /**
   * Records what became of one push delivery by the lease holder `owner` (ignored if the lease
   * moved on). `events`: the delivery's events as the claim handed them out, which a store that
   * merged deliveries at the claim settles by (the others settle `deliveryId`).
   */
  settleDelivery(owner: string, receiverId: string, deliveryId: string, outcome: DeliveryOutcome, events?: readonly RevocationEvent[]): Promise<void>;
  /** Ends `owner`'s lease of a receiver early, so that its next due delivery goes out at once. */
  releaseReceiver(owner: string, receiverId: string): Promise<void>;
  /** Requeues a receiver's dead letters, due at `now`, attempts reset. Returns how many. */
  retryDead(receiverId: string, now: number, trail: Trail): Promise<number>;

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

  /**
   * The bounded outbox (docs/events.md): up to `limit` pending deliveries, push or poll, whose
   * event happened longer than their receiver's retention before `now` become dead letters, with
   * that as their last error, as the receiver's too. The oldest go first; a store may look only
   * at the first few thousand pending of each receiver (the old ones are there). Returns how many.
   */
  expireDeliveries(now: number, limit: number): Promise<number>;
  /** Deletes up to `limit` events no delivery refers to any more. Returns how many. */
  purgeDeliveredEvents(limit: number): Promise<number>;
}
