import type { Trail } from '../trail.js';
import type { EventStore } from '../store.js';
import {
  DuplicateReceiverError,
  isPausedStream,
  RETENTION_ERROR,
  type ClaimedReceiver,
  type Delivery,
  type DeliveryOutcome,
  type ReceiverChange,
  type ReceiverRecord,
  type ReceiverStatus,
  type RevocationEvent,
  type SigningKeyRecord,
} from '../event-records.js';
import type { AuditEntry } from '../audit.js';

interface MemoryDelivery {
  receiverId: string;
  eventId: string;
  seq: number;
  state: 'pending' | 'dead';
  attempts: number;
  nextAttemptAt: number;
  lastError: string | null;
}

interface MemoryReceiver {
  record: ReceiverRecord;
  /** Whether its stream is paused, read from the settings as they are written (the SQL stores' generated column). */
  paused: boolean;
  leaseOwner: string | null;
  leaseUntil: number;
  lastError: string | null;
  lastDeliveredAt: number | null;
}

/**
 * The reference implementation of {@link EventStore}: the outbox, receivers and signing keys in
 * plain maps. {@link MemoryStore} owns one and calls {@link emit} inside its revocations.
 */
export class MemoryEvents implements EventStore {
  /** `appendAudit`: the store's audit log, for a change written with its audit line. */
  constructor(private readonly appendAudit: (entry: AuditEntry) => void) {}

  private readonly receivers = new Map<string, MemoryReceiver>();
  private readonly events = new Map<string, { seq: number; event: RevocationEvent }>();
  private deliveries: MemoryDelivery[] = [];
  private keys: SigningKeyRecord[] = [];
  private seq = 0;

  /** Writes `event` with one delivery per receiver, when there is any receiver. */
  emit(event: RevocationEvent | undefined): void {
    if (!event || this.receivers.size === 0) return;
    const seq = ++this.seq;
    this.events.set(event.id, { seq, event: { ...event } });
    for (const r of this.receivers.values()) {
      this.deliveries.push({ receiverId: r.record.id, eventId: event.id, seq, state: 'pending', attempts: 0, nextAttemptAt: event.at, lastError: null });
    }
  }

  async createReceiver(receiver: ReceiverRecord, trail: Trail): Promise<void> {
    const { audit } = trail;
    if (this.receivers.has(receiver.id)) throw new DuplicateReceiverError(receiver.id);
    this.receivers.set(receiver.id, { record: { stream: null, ...receiver }, paused: isPausedStream(receiver.stream), leaseOwner: null, leaseUntil: 0, lastError: null, lastDeliveredAt: null });
    if (audit) this.appendAudit(audit);
  }

  async getReceiver(id: string): Promise<ReceiverRecord | null> {
    const r = this.receivers.get(id);
    return r ? { ...r.record } : null;
  }

  async findPollReceiver(clientId: string): Promise<ReceiverRecord | null> {
    for (const r of this.receivers.values()) if (r.record.delivery === 'poll' && r.record.clientId === clientId) return { ...r.record };
    return null;
  }

  async listReceivers(): Promise<ReceiverStatus[]> {
    return [...this.receivers.values()]
      .sort((a, b) => (a.record.id < b.record.id ? -1 : 1))
      .map((r) => {
        const mine = this.deliveries.filter((d) => d.receiverId === r.record.id);
        const pending = mine.filter((d) => d.state === 'pending');
        const oldest = pending.length === 0 ? null : Math.min(...pending.map((d) => this.events.get(d.eventId)!.event.at));
        return {
          ...r.record,
          pending: pending.length,
          dead: mine.length - pending.length,
          oldestPendingAt: oldest,
          lastError: r.lastError,
          lastDeliveredAt: r.lastDeliveredAt,
        };
      });
  }

  async updateReceiver(id: string, change: ReceiverChange, trail: Trail): Promise<boolean> {
    const r = this.receivers.get(id);
    if (!r) return false;
    if (change.ifStream !== undefined && (r.record.stream ?? null) !== change.ifStream) return false;
    // The audit line first: when it throws, nothing of the change is made either.
    if (trail.audit) this.appendAudit(trail.audit);
    const record = { ...r.record };
    if (change.endpointUrl !== undefined) record.endpointUrl = change.endpointUrl;
    if (change.authorization !== undefined) record.authorization = change.authorization;
    if (change.stream !== undefined) record.stream = change.stream;
    if (change.retentionMs !== undefined) record.retentionMs = change.retentionMs;
    r.record = record;
    r.paused = isPausedStream(record.stream);
    return true;
  }

  async expireDeliveries(now: number, limit: number): Promise<number> {
    let n = 0;
    for (const d of [...this.deliveries].sort((a, b) => a.seq - b.seq)) {
      if (n >= limit) break;
      const r = this.receivers.get(d.receiverId);
      if (d.state !== 'pending' || !r || this.events.get(d.eventId)!.event.at >= now - r.record.retentionMs) continue;
      d.state = 'dead';
      d.lastError = r.lastError = RETENTION_ERROR;
      n++;
    }
    return n;
  }

  async deleteReceiver(id: string, trail: Trail): Promise<boolean> {
    const { audit } = trail;
    if (!this.receivers.delete(id)) return false;
    this.deliveries = this.deliveries.filter((d) => d.receiverId !== id);
    if (audit) this.appendAudit(audit);
    return true;
  }

  async claimPushReceivers(owner: string, now: number, leaseMs: number, limit: number, perReceiver: number): Promise<ClaimedReceiver[]> {
    const claimed: ClaimedReceiver[] = [];
    for (const r of this.receivers.values()) {
      if (claimed.length >= limit) break;
      if (r.record.delivery !== 'push' || (r.leaseOwner !== null && r.leaseUntil > now)) continue;
      if (r.paused) continue;
      const pending = this.pendingOf(r.record.id);
      if (pending.length === 0 || pending[0]!.nextAttemptAt > now) continue;
      r.leaseOwner = owner;
      r.leaseUntil = now + leaseMs;
      claimed.push({ receiver: { ...r.record }, deliveries: pending.slice(0, perReceiver).map((d) => this.view(d)) });
    }
    return claimed;
  }

  async settleDelivery(owner: string, receiverId: string, eventId: string, outcome: DeliveryOutcome): Promise<void> {
    const r = this.receivers.get(receiverId);
    if (!r || r.leaseOwner !== owner) return;
    const i = this.deliveries.findIndex((d) => d.receiverId === receiverId && d.eventId === eventId && d.state === 'pending');
    if (i < 0) return;
    const d = this.deliveries[i]!;
    if (outcome.kind === 'delivered') {
      this.deliveries.splice(i, 1);
      r.lastDeliveredAt = outcome.at;
    } else if (outcome.kind === 'retry') {
      d.attempts++;
      d.nextAttemptAt = outcome.retryAt;
      d.lastError = r.lastError = outcome.error;
    } else {
      d.attempts++;
      d.state = 'dead';
      d.lastError = r.lastError = outcome.error;
    }
  }

  async releaseReceiver(owner: string, receiverId: string): Promise<void> {
    const r = this.receivers.get(receiverId);
    if (r && r.leaseOwner === owner) {
      r.leaseOwner = null;
      r.leaseUntil = 0;
    }
  }

  async retryDead(receiverId: string, now: number, trail: Trail): Promise<number> {
    const { audit } = trail;
    let n = 0;
    for (const d of this.deliveries) {
      if (d.receiverId === receiverId && d.state === 'dead') {
        d.state = 'pending';
        d.attempts = 0;
        d.nextAttemptAt = now;
        n++;
      }
    }
    if (audit) this.appendAudit({ ...audit, count: n });
    return n;
  }

  async pendingDeliveries(receiverId: string, limit: number): Promise<Delivery[]> {
    return this.pendingOf(receiverId)
      .slice(0, limit)
      .map((d) => this.view(d));
  }

  async ackDeliveries(receiverId: string, eventIds: readonly string[], at: number): Promise<number> {
    const ids = new Set(eventIds);
    const before = this.deliveries.length;
    this.deliveries = this.deliveries.filter((d) => !(d.receiverId === receiverId && d.state === 'pending' && ids.has(d.eventId)));
    const n = before - this.deliveries.length;
    const r = this.receivers.get(receiverId);
    if (n > 0 && r) r.lastDeliveredAt = at;
    return n;
  }

  async purgeDeliveredEvents(limit: number): Promise<number> {
    const referred = new Set(this.deliveries.map((d) => d.eventId));
    let n = 0;
    for (const id of [...this.events.keys()]) {
      if (n >= limit) break;
      if (!referred.has(id)) {
        this.events.delete(id);
        n++;
      }
    }
    return n;
  }

  async listSigningKeys(): Promise<SigningKeyRecord[]> {
    return [...this.keys].sort((a, b) => b.createdAt - a.createdAt).map((k) => ({ ...k }));
  }

  async addSigningKey(key: SigningKeyRecord, ifCurrent: string | null | undefined, trail: Trail): Promise<boolean> {
    const { audit } = trail;
    const current = this.keys.find((k) => k.retiredAt === null && k.alg === key.alg);
    if (ifCurrent !== undefined && (current?.kid ?? null) !== ifCurrent) return false;
    if (audit) this.appendAudit(audit); // first: when it throws, the key is not added either
    if (current) current.retiredAt = key.createdAt;
    this.keys.push({ ...key, retiredAt: null });
    return true;
  }

  async deleteRetiredKeys(before: number): Promise<number> {
    const n = this.keys.length;
    this.keys = this.keys.filter((k) => k.retiredAt === null || k.retiredAt >= before);
    return n - this.keys.length;
  }

  private pendingOf(receiverId: string): MemoryDelivery[] {
    return this.deliveries.filter((d) => d.receiverId === receiverId && d.state === 'pending').sort((a, b) => a.seq - b.seq);
  }

  private view(d: MemoryDelivery): Delivery {
    return { receiverId: d.receiverId, id: d.eventId, events: [{ ...this.events.get(d.eventId)!.event }], attempts: d.attempts };
  }
}
