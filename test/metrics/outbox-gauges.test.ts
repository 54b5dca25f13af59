import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { OUTBOX_GAUGES, registerOutboxGauges } from '../../src/metrics/outbox-gauges.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { MemoryStore } from '../../src/store/memory/index.js';
import type { ReceiverRecord } from '../../src/store/store.js';

const T0 = Date.UTC(2026, 0, 1);
const yaml = createRequire(import.meta.url)('js-yaml') as { load(text: string): unknown };

function receiver(id: string, delivery: 'push' | 'poll'): ReceiverRecord {
  return { id, delivery, endpointUrl: delivery === 'push' ? `https://${id}.example.test/e` : null, authorization: null, caPem: null, clientId: delivery === 'poll' ? id : null, audience: id, createdAt: T0, retentionMs: 86_400_000 };
}

async function storeWithBacklog(): Promise<MemoryStore> {
  const store = new MemoryStore();
  await store.createReceiver(receiver('rs-poll', 'poll'), {});
  await store.createReceiver(receiver('rs-push', 'push'), {});
  for (let n = 1; n <= 3; n++) {
    await store.createClient({ id: `c${n}`, name: 'c', secretHash: null, scope: '', orgId: '', audience: '', accessTtlMs: null, refreshTtlMs: null, createdAt: T0, secretUpdatedAt: T0, redirectUris: [], grantTypes: ['refresh_token'], loginProvider: false, requireDpop: false }, {});
    await store.deleteClient(`c${n}`, { event: { id: `00000000-0000-7000-8000-00000000000${n}`, at: T0 + n * 1000, reason: 'client_deleted', scope: 'client', clientId: `c${n}` } });
  }
  // One of the push receiver's is a dead letter; the poll receiver acknowledged its first.
  await store.claimPushReceivers('me', T0 + 5000, 30_000, 10, 10);
  await store.settleDelivery('me', 'rs-push', '00000000-0000-7000-8000-000000000001', { kind: 'dead', at: T0 + 5000, error: 'HTTP 400' });
  await store.ackDeliveries('rs-poll', ['00000000-0000-7000-8000-000000000001'], T0 + 5000);
  return store;
}

function sample(text: string, name: string, receiverId: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{receiver="${receiverId}"}`));
  return line === undefined ? undefined : Number(line.split(' ').pop());
}

describe('outbox gauges in /metrics', () => {
  it('pending, oldest pending age and dead letters per receiver, read from the store at each scrape', async () => {
    const store = await storeWithBacklog();
    const registry = new Registry();
    let now = T0 + 62_000;
    registerOutboxGauges(registry, () => store.listReceivers(), () => now);
    const text = await registry.metrics();
    expect(sample(text, OUTBOX_GAUGES.pending, 'rs-poll')).toBe(2);
    expect(sample(text, OUTBOX_GAUGES.pending, 'rs-push')).toBe(2);
    expect(sample(text, OUTBOX_GAUGES.oldestAge, 'rs-poll')).toBe(60); // its oldest pending: c2's, at T0 + 2 s
    expect(sample(text, OUTBOX_GAUGES.dead, 'rs-push')).toBe(1);
    expect(sample(text, OUTBOX_GAUGES.dead, 'rs-poll')).toBe(0);
    // A receiver removed leaves no series behind; a store that fails leaves the gauges empty, the scrape answered.
    await store.deleteReceiver('rs-push', {});
    now += 10_000;
    const after = await registry.metrics();
    expect(sample(after, OUTBOX_GAUGES.pending, 'rs-push')).toBeUndefined();
    expect(sample(after, OUTBOX_GAUGES.oldestAge, 'rs-poll')).toBe(70);
    const failing = new Registry();
    registerOutboxGauges(failing, () => Promise.reject(new Error('the store went away')), () => now);
    expect(await failing.metrics()).toContain(`# TYPE ${OUTBOX_GAUGES.pending} gauge`);
  });

  it('the alert rules of docs/observability.md parse, and use only metrics a scrape has', async () => {
    const doc = readFileSync(new URL('../../docs/observability.md', import.meta.url), 'utf8');
    const block = /### Alerting on the security events[\s\S]*?```yaml\n([\s\S]*?)```/.exec(doc)?.[1];
    expect(block).toBeDefined();
    const rules = (yaml.load(block!) as { groups: { rules: { alert: string; expr: string; for: string }[] }[] }).groups.flatMap((g) => g.rules);
    expect(rules.map((r) => r.alert)).toEqual(['TokenctlEventReceiverBehind', 'TokenctlEventDeadLetters', 'TokenctlEventBacklog']);
    const metrics = createMetrics();
    registerOutboxGauges(metrics.registry, async () => (await storeWithBacklog()).listReceivers(), () => T0 + 62_000);
    const scrape = await metrics.registry.metrics();
    for (const rule of rules) {
      const names = rule.expr.match(/\btokenctl_[a-z_]+/g) ?? [];
      expect(names.length, rule.alert).toBeGreaterThan(0);
      for (const name of names) expect(scrape, `${rule.alert}: ${name}`).toMatch(new RegExp(`^${name}\\{receiver="rs-poll"\\} `, 'm'));
      expect(rule.for).toMatch(/^\d+m$/);
    }
  });
});
