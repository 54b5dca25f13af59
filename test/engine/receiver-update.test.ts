import { describe, expect, it } from 'vitest';
import { SESSION_REVOKED, TOKENS_REVOKED } from '../../src/engine/stream-settings.js';
import { MemoryStore } from '../../src/store/memory/index.js';
import type { AuditEntry, ReceiverChange } from '../../src/store/store.js';
import type { Trail } from '../../src/store/trail.js';
import { DAY, makeEngine } from '../helpers/engine.js';

/** A memory store whose audit line fails when `failWhen` says so (a failure inside the change's own write), and that keeps the changes it is asked for. */
class FailingAuditStore extends MemoryStore {
  failWhen: (entry: AuditEntry) => boolean = () => false;
  readonly changes: ReceiverChange[] = [];
  override async updateReceiver(id: string, change: ReceiverChange, trail: Trail): Promise<boolean> {
    this.changes.push(change);
    return super.updateReceiver(id, change, trail);
  }
  protected override appendAuditNow(entry: AuditEntry): void {
    if (this.failWhen(entry)) throw new Error('injected: the audit line is not written');
    super.appendAuditNow(entry);
  }
}

/** `receiver update` with several flags: one change, made whole or not at all. */
describe('updateReceiver', () => {
  const setUp = async () => {
    const store = new FailingAuditStore();
    const { engine } = makeEngine({ store });
    await engine.addReceiver({ id: 'rs', delivery: 'push', endpointUrl: 'https://rs.example.test/events' }, 'cli:op');
    return { engine, store };
  };

  it('--events, --alg and --retention at once: one store change, one audit line naming all of it', async () => {
    const { engine, store } = await setUp();
    const view = await engine.updateReceiver('rs', { eventsRequested: [TOKENS_REVOKED, SESSION_REVOKED], alg: 'RS256', retentionMs: 7 * DAY }, 'cli:op');
    expect(store.changes).toEqual([{ stream: expect.any(String), retentionMs: 7 * DAY }]);
    expect(view).toMatchObject({ events_requested: [TOKENS_REVOKED, SESSION_REVOKED], signing_alg: 'RS256', retention_ms: 7 * DAY, endpoint_url: 'https://rs.example.test/events' });
    const lines = (await store.listAudit({})).filter((a) => a.action === 'receiver.update');
    expect(lines.map((a) => a.detail)).toEqual([`events ${TOKENS_REVOKED} ${SESSION_REVOKED}; alg RS256; retention ${7 * DAY} ms`]);
  });

  it('a failure in the part that writes the retention leaves the events and the algorithm unchanged too', async () => {
    const { engine, store } = await setUp();
    const before = await store.getReceiver('rs');
    // Fails whatever line tells of the retention: made in a second write, the stream would already have changed.
    store.failWhen = (entry) => entry.action === 'receiver.update' && entry.detail.includes('retention');
    await expect(engine.updateReceiver('rs', { eventsRequested: [SESSION_REVOKED], alg: 'RS256', retentionMs: 7 * DAY }, 'cli:op')).rejects.toThrow(/injected/);
    expect(await store.getReceiver('rs')).toEqual(before);
    expect(await engine.receiverStatus('rs')).toMatchObject({ events_requested: [TOKENS_REVOKED], signing_alg: 'ES256', retention_ms: DAY });
    expect((await store.listAudit({})).filter((a) => a.action === 'receiver.update')).toEqual([]);
  });

  it('--retention alone changes the retention alone: the stream settings are not written back', async () => {
    const { engine, store } = await setUp();
    await engine.updateReceiver('rs', { alg: 'RS256' }, 'cli:op');
    const stream = (await store.getReceiver('rs'))!.stream;
    expect(await engine.updateReceiver('rs', { retentionMs: 2 * DAY }, 'cli:op')).toMatchObject({ retention_ms: 2 * DAY, signing_alg: 'RS256' });
    expect(store.changes.at(-1)).toEqual({ retentionMs: 2 * DAY });
    expect((await store.getReceiver('rs'))!.stream).toBe(stream);
  });
});
