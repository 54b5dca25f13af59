import { describe, expect, it } from 'vitest';
import { httpObserver } from '../../src/metrics/http-observer.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { quantileOf } from '../../src/metrics/scrape.js';
import { renderMetricsStatus } from '../../src/cli/render/metrics-status.js';
import { metricsStatus } from '../../src/metrics/status-view.js';
import { startMetricsListener } from '../../src/metrics/listener.js';
import { metricsListenerWarning } from '../../src/serve/transport.js';
import type { MetricsStatus } from '../../src/metrics/status-view.js';
import { metricsUrl, statusOnce, watchStatus } from '../../src/metrics/status-watch.js';

describe('tokenctl status --url: the numbers', () => {
  it('totals from one scrape, rates and the interval’s own latency from two', async () => {
    const metrics = createMetrics();
    const observe = httpObserver(metrics);
    for (let i = 0; i < 10; i++) observe({ endpoint: 'introspection', status: 200, errorCode: null, reason: null, clientId: 'rs', outcome: { kind: 'introspected', active: true }, durationMs: 0.3 });
    const before = await metrics.registry.metrics();
    for (let i = 0; i < 20; i++) observe({ endpoint: 'introspection', status: 200, errorCode: null, reason: null, clientId: 'rs', outcome: { kind: 'introspected', active: true }, durationMs: 40 });
    for (let i = 0; i < 4; i++) observe({ endpoint: 'token', status: 401, errorCode: 'invalid_client', reason: 'unknown_client', clientId: null, outcome: null, durationMs: 1 });
    observe({ endpoint: 'token', status: 503, errorCode: 'temporarily_unavailable', reason: null, clientId: 'rs', outcome: null, durationMs: 5 });
    const after = await metrics.registry.metrics();

    const totals = metricsStatus('http://x/metrics', after);
    expect(totals.interval_s).toBeNull();
    expect(totals.endpoints.introspection).toMatchObject({ requests: 30, per_second: null, errors: 0 });
    expect(totals.endpoints.token).toMatchObject({ requests: 5, errors: 5 });
    expect(totals.unauthorized).toEqual({ unknown_client: 4 });
    expect(totals.unavailable).toBe(1);

    const live = metricsStatus('http://x/metrics', after, { text: before, intervalS: 2 });
    expect(live.endpoints.introspection.requests).toBe(20);
    expect(live.endpoints.introspection.per_second).toBe(10);
    // Only the interval's answers (all 40 ms): the median lies in the 25–50 ms bucket.
    expect(live.endpoints.introspection.p50_ms).toBeGreaterThan(25);
    expect(live.endpoints.introspection.p50_ms).toBeLessThanOrEqual(50);
    expect(totals.endpoints.introspection.p50_ms).toBeLessThanOrEqual(50);
    expect(live.process.cpu_percent).not.toBeNull();

    const text = renderMetricsStatus(live);
    expect(text).toMatch(/introspection\s+10\s/);
    expect(text).toMatch(/401: 4 unknown_client\s+503: 1/);
  });

  it('histogram quantiles as PromQL computes them, and metrics URLs', () => {
    expect(quantileOf([[1, 50], [2, 100], [Infinity, 100]], 0.5)).toBe(1);
    expect(quantileOf([[1, 50], [2, 100], [Infinity, 100]], 0.75)).toBe(1.5);
    expect(quantileOf([[1, 0], [Infinity, 0]], 0.5)).toBeUndefined();
    expect(metricsUrl('http://127.0.0.1:9464')).toBe('http://127.0.0.1:9464/metrics');
    expect(metricsUrl('http://127.0.0.1:9464/custom')).toBe('http://127.0.0.1:9464/custom');
  });
});

describe('tokenctl status --url: reading a server', () => {
  it('shows the totals at once, then each interval, and says so when the URL is not tokenctl metrics', async () => {
    const metrics = createMetrics();
    const observe = httpObserver(metrics);
    const listener = await startMetricsListener('127.0.0.1', 0, async () => ({ contentType: metrics.registry.contentType, body: await metrics.registry.metrics() }));
    const other = await startMetricsListener('127.0.0.1', 0, async () => ({ contentType: 'text/plain', body: 'up 1\n' }));
    try {
      observe({ endpoint: 'token', status: 200, errorCode: null, reason: null, clientId: 'rs', outcome: { kind: 'refreshed', rotated: false }, durationMs: 3 });
      const shown: MetricsStatus[] = [];
      // A 0.4 s interval (the command's --interval is 1 s at least): the second view, after it, shows what happened meanwhile.
      const watching = watchStatus(listener.url, 0.4, (s) => shown.push(s), new AbortController().signal, 1);
      await expect.poll(() => shown.length, { interval: 5 }).toBe(1); // the first view taken: what follows is the interval's
      for (let i = 0; i < 4; i++) observe({ endpoint: 'token', status: 200, errorCode: null, reason: null, clientId: 'rs', outcome: { kind: 'refreshed', rotated: false }, durationMs: 3 });
      await watching;
      expect(shown).toHaveLength(2);
      expect(shown[0]!.interval_s).toBeNull();
      expect(shown[0]!.tokens.refreshed).toBe(1);
      expect(shown[1]!.interval_s).toBeGreaterThan(0.39);
      expect(shown[1]!.tokens.refreshed).toBe(4);
      await expect(statusOnce(other.url)).rejects.toThrow(/not with tokenctl's metrics/);
      await expect(statusOnce('http://127.0.0.1:1/metrics')).rejects.toThrow(/no metrics at/);
    } finally {
      await listener.close();
      await other.close();
    }
  });

  it('warns when the metrics listener leaves loopback', () => {
    const at = (host: string, clientLabel = false) => metricsListenerWarning({ host, clientLabel });
    expect(at('127.0.0.1')).toBeUndefined();
    expect(at('::1')).toBeUndefined();
    expect(at('0.0.0.0')).toMatch(/plain HTTP without authentication/);
    expect(at('10.0.0.5', true)).toMatch(/client ids/);
  });
});

describe('status --url when no metrics answer: the reason in words', () => {
  it('a port nothing listens on: connection refused; a port fetch blocks: said so, not "fetch failed"', async () => {
    const { createServer } = await import('node:net');
    const server = createServer();
    await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
    const port = (server.address() as { port: number }).port;
    await new Promise((closed) => server.close(closed));
    await expect(statusOnce(`http://127.0.0.1:${port}/metrics`)).rejects.toThrow(`no metrics at http://127.0.0.1:${port}/metrics: connection refused`);
    const blocked = await statusOnce('http://127.0.0.1:6000/metrics').then(
      () => '',
      (e: unknown) => (e as Error).message,
    );
    expect(blocked).toMatch(/fetch refuses port 6000/);
    expect(blocked).not.toMatch(/fetch failed/);
  });
});
