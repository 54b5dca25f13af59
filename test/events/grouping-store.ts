import { MemoryStore } from '../../src/store/memory/index.js';
import type { ClaimedReceiver, Delivery, DeliveryOutcome } from '../../src/store/store.js';

/**
 * The in-memory store with deliveries of several events, as a store that groups the revocations of
 * one commit hands them out (the memory and PostgreSQL stores hand out one event per delivery):
 * every `size` consecutive pending deliveries of a receiver are one delivery, its id the first
 * one's. Settling or acknowledging it settles or acknowledges all of them. What lets the wire side
 * be tested with multi-revocation SETs whatever the real stores do.
 */
export class GroupingMemoryStore extends MemoryStore {
  /** receiver/delivery id → the ids of the one-event deliveries it stands for. */
  private readonly members = new Map<string, string[]>();

  constructor(private readonly size = 3) {
    super();
  }

  private group(receiverId: string, deliveries: Delivery[]): Delivery[] {
    const out: Delivery[] = [];
    for (let i = 0; i < deliveries.length; i += this.size) {
      const chunk = deliveries.slice(i, i + this.size);
      const id = chunk[0]!.id;
      this.members.set(`${receiverId}/${id}`, chunk.map((d) => d.id));
      out.push({ receiverId, id, events: chunk.flatMap((d) => d.events), attempts: chunk[0]!.attempts });
    }
    return out;
  }

  private ids(receiverId: string, id: string): string[] {
    return this.members.get(`${receiverId}/${id}`) ?? [id];
  }

  override async claimPushReceivers(owner: string, now: number, leaseMs: number, limit: number, perReceiver: number): Promise<ClaimedReceiver[]> {
    const claimed = await super.claimPushReceivers(owner, now, leaseMs, limit, perReceiver * this.size);
    return claimed.map((c) => ({ receiver: c.receiver, deliveries: this.group(c.receiver.id, c.deliveries).slice(0, perReceiver) }));
  }

  override async settleDelivery(owner: string, receiverId: string, deliveryId: string, outcome: DeliveryOutcome): Promise<void> {
    for (const id of this.ids(receiverId, deliveryId)) await super.settleDelivery(owner, receiverId, id, outcome);
  }

  override async pendingDeliveries(receiverId: string, limit: number): Promise<Delivery[]> {
    return this.group(receiverId, await super.pendingDeliveries(receiverId, limit * this.size)).slice(0, limit);
  }

  override async ackDeliveries(receiverId: string, deliveryIds: readonly string[], at: number): Promise<number> {
    let n = 0;
    for (const id of deliveryIds) if ((await super.ackDeliveries(receiverId, this.ids(receiverId, id), at)) > 0) n++;
    return n;
  }
}
