import { describe, expect, it } from 'vitest';
import { MemoryEvents } from '../../src/store/memory/outbox-store.js';
import type { AuditEntry } from '../../src/store/store.js';
import { HOUR, T0 } from '../helpers/records.js';
import { makePushReceiver } from './events-contract.js';
import { describeReceiverColumns, sqliteBackend } from './receiver-columns.js';

describeReceiverColumns('SQLite', sqliteBackend);

describe('receiver changes on the memory store', () => {
  it('a change whose audit line fails leaves the receiver as it was', async () => {
    let fail = true;
    const written: AuditEntry[] = [];
    const events = new MemoryEvents((entry) => {
      if (fail) throw new Error('injected: the audit line is not written');
      written.push(entry);
    });
    const before = makePushReceiver('rs', { stream: '{"status":"enabled"}' });
    await events.createReceiver(before, {});
    const audit: AuditEntry = { at: T0, actor: 'cli:op', action: 'receiver.update', target: 'receiver:rs', count: 1, detail: 'x' };
    const change = { stream: '{"status":"paused"}', retentionMs: 7 * 24 * HOUR };
    await expect(events.updateReceiver('rs', change, { audit })).rejects.toThrow(/injected/);
    expect(await events.getReceiver('rs')).toEqual(before);
    fail = false;
    expect(await events.updateReceiver('rs', change, { audit })).toBe(true);
    expect(await events.getReceiver('rs')).toEqual({ ...before, ...change });
    expect(written).toEqual([audit]);
  });

  it('a write conditional on the stream (ifStream) lands only over exactly that JSON, and writes no audit line otherwise', async () => {
    const written: AuditEntry[] = [];
    const events = new MemoryEvents((entry) => written.push(entry));
    await events.createReceiver(makePushReceiver('rs', { stream: '{"status":"enabled"}' }), {});
    const audit: AuditEntry = { at: T0, actor: 'ssf:rs', action: 'receiver.update', target: 'receiver:rs', count: 1, detail: 'x' };
    expect(await events.updateReceiver('rs', { stream: '{"status":"disabled"}', ifStream: '{"status":"paused"}' }, { audit })).toBe(false);
    expect((await events.getReceiver('rs'))!.stream).toBe('{"status":"enabled"}');
    expect(written).toEqual([]);
    expect(await events.updateReceiver('rs', { stream: '{"status":"disabled"}', ifStream: '{"status":"enabled"}' }, { audit })).toBe(true);
    expect((await events.getReceiver('rs'))!.stream).toBe('{"status":"disabled"}');
    expect(written).toEqual([audit]);
  });
});
