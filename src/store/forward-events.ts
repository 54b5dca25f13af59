import type { Trail } from './trail.js';
import type { EventStore } from './store.js';
import type {
  ClaimedReceiver,
  Delivery,
  DeliveryOutcome,
  ReceiverChange,
  ReceiverRecord,
  ReceiverStatus,
  RevocationEvent,
  SigningKeyRecord,
} from './event-records.js';

/**
 * The {@link EventStore} half of a {@link TokenStore}, forwarded to the store's own events object
 * (`memory/events.ts`, `sqlite/events.ts`, `postgres/events.ts`): each store extends this and names
 * that object in `_eventStore()`, instead of writing the fifteen forwarding methods itself. Every
 * method is async, so that whatever `_eventStore()` throws (a closed store) is a rejection.
 */
export abstract class ForwardsEventStore implements EventStore {
  /** The object the event methods go to (metrics wrap the store's operations, not this). */
  protected abstract _eventStore(): EventStore;

  async createReceiver(receiver: ReceiverRecord, trail: Trail): Promise<void> {
    return this._eventStore().createReceiver(receiver, trail);
  }
  async getReceiver(id: string): Promise<ReceiverRecord | null> {
    return this._eventStore().getReceiver(id);
  }
  async findPollReceiver(clientId: string): Promise<ReceiverRecord | null> {
    return this._eventStore().findPollReceiver(clientId);
  }
  async listReceivers(): Promise<ReceiverStatus[]> {
    return this._eventStore().listReceivers();
  }
  async updateReceiver(id: string, change: ReceiverChange, trail: Trail): Promise<boolean> {
    return this._eventStore().updateReceiver(id, change, trail);
  }
  async expireDeliveries(now: number, limit: number): Promise<number> {
    return this._eventStore().expireDeliveries(now, limit);
  }
  async deleteReceiver(id: string, trail: Trail): Promise<boolean> {
    return this._eventStore().deleteReceiver(id, trail);
  }
  async claimPushReceivers(owner: string, now: number, leaseMs: number, limit: number, perReceiver: number, mergeUpTo?: number): Promise<ClaimedReceiver[]> {
    return this._eventStore().claimPushReceivers(owner, now, leaseMs, limit, perReceiver, mergeUpTo);
  }
  async settleDelivery(owner: string, receiverId: string, deliveryId: string, outcome: DeliveryOutcome, events?: readonly RevocationEvent[]): Promise<void> {
    return this._eventStore().settleDelivery(owner, receiverId, deliveryId, outcome, events);
  }
  async releaseReceiver(owner: string, receiverId: string): Promise<void> {
    return this._eventStore().releaseReceiver(owner, receiverId);
  }
  async retryDead(receiverId: string, now: number, trail: Trail): Promise<number> {
    return this._eventStore().retryDead(receiverId, now, trail);
  }
  async pendingDeliveries(receiverId: string, limit: number, mergeUpTo?: number): Promise<Delivery[]> {
    return this._eventStore().pendingDeliveries(receiverId, limit, mergeUpTo);
  }
  async ackDeliveries(receiverId: string, deliveryIds: readonly string[], at: number): Promise<number> {
    return this._eventStore().ackDeliveries(receiverId, deliveryIds, at);
  }
  async purgeDeliveredEvents(limit: number): Promise<number> {
    return this._eventStore().purgeDeliveredEvents(limit);
  }
  async listSigningKeys(): Promise<SigningKeyRecord[]> {
    return this._eventStore().listSigningKeys();
  }
  async addSigningKey(key: SigningKeyRecord, ifCurrent: string | null | undefined, trail: Trail): Promise<boolean> {
    return this._eventStore().addSigningKey(key, ifCurrent, trail);
  }
  async deleteRetiredKeys(before: number): Promise<number> {
    return this._eventStore().deleteRetiredKeys(before);
  }
}
