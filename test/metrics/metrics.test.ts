import { afterEach, describe, expect, it } from 'vitest';
import type { AnswerRecord } from '../../src/http/observer.js';
import { httpObserver } from '../../src/metrics/http-observer.js';
import { startMetricsListener, type MetricsListener } from '../../src/metrics/listener.js';
import { createMetrics } from '../../src/metrics/metrics.js';
import { processObservability } from '../../src/metrics/observability.js';
import { Readiness } from '../../src/http/readiness.js';
import { parseScrape, quantile, sum } from '../../src/metrics/scrape.js';
import { instrumentStore } from '../../src/metrics/store-metrics.js';
import { MemoryStore } from '../../src/store/memory/index.js';
import { StoreUnavailableError, type TokenStore } from '../../src/store/store.js';
import { addClient, makeEngine } from '../helpers/engine.js';

const answer = (overrides: Partial<AnswerRecord>): AnswerRecord => ({
  endpoint: 'introspection',
  status: 200,
  errorCode: null,
  reason: null,
  clientId: 'rs',
  outcome: { kind: 'introspected', active: true },
  durationMs: 2,
  ...overrides,
});

describe('the HTTP observer', () => {
  it('counts answers by endpoint, status, outcome and reason, and the token counters by kind', async () => {
    const metrics = createMetrics();
    const observe = httpObserver(metrics);
    for (let i = 0; i < 5; i++) observe(answer({}));
    observe(answer({ outcome: { kind: 'introspected', active: false } }));
    observe(answer({ endpoint: 'token', outcome: { kind: 'refreshed', rotated: true }, durationMs: 40 }));
    observe(answer({ endpoint: 'token', outcome: { kind: 'reuse_detected', tokens: 3 }, status: 400, errorCode: 'invalid_grant', reason: 'replaced' }));
    observe(answer({ endpoint: 'revocation', outcome: { kind: 'revoked', grant: true } }));
    observe(answer({ endpoint: 'revocation', outcome: { kind: 'revoked', grant: false } }));
    observe(answer({ endpoint: 'revocation', outcome: { kind: 'revoke_noop' } }));
    observe(answer({ status: 401, errorCode: 'invalid_client', reason: 'bad_secret', clientId: 'attacker-chosen', outcome: null }));
    observe(answer({ status: 401, errorCode: 'invalid_client', reason: 'bad_secret', clientId: null, outcome: null }));
    observe(answer({ endpoint: 'token', status: 503, errorCode: 'temporarily_unavailable', outcome: null, durationMs: 5000 }));
    const scrape = parseScrape(await metrics.registry.metrics());

    expect(sum(scrape, 'tokenctl_http_requests_total', { endpoint: 'introspection', status: '200', outcome: 'active' })).toBe(5);
    expect(sum(scrape, 'tokenctl_http_requests_total', { endpoint: 'introspection', outcome: 'inactive' })).toBe(1);
    expect(sum(scrape, 'tokenctl_http_requests_total', { endpoint: 'introspection', status: '401', reason: 'bad_secret' })).toBe(2);
    expect(sum(scrape, 'tokenctl_http_requests_total', { endpoint: 'token', status: '503' })).toBe(1);
    expect(sum(scrape, 'tokenctl_http_requests_total')).toBe(14);
    expect(sum(scrape, 'tokenctl_http_request_duration_seconds_count', { endpoint: 'introspection', outcome: 'unauthorized' })).toBe(2);
    expect(sum(scrape, 'tokenctl_http_request_duration_seconds_count', { endpoint: 'token', outcome: 'unavailable' })).toBe(1);
    expect(quantile(scrape, 'tokenctl_http_request_duration_seconds', 0.5, { endpoint: 'introspection', outcome: 'ok' })).toBeLessThanOrEqual(0.0025);
    expect(sum(scrape, 'tokenctl_tokens_refreshed_total', { rotated: 'true' })).toBe(1);
    expect(sum(scrape, 'tokenctl_revocations_total', { kind: 'grant' })).toBe(1);
    expect(sum(scrape, 'tokenctl_revocations_total', { kind: 'single' })).toBe(1);
    expect(sum(scrape, 'tokenctl_revocations_total', { kind: 'reuse_detection' })).toBe(1);
    expect(sum(scrape, 'tokenctl_reuse_revoked_tokens_total')).toBe(3);
    expect(sum(scrape, 'tokenctl_reuse_detections_total')).toBe(1);
    expect(sum(scrape, 'tokenctl_client_auth_failures_total', { reason: 'bad_secret' })).toBe(2);
    // No client label unless asked for.
    expect(scrape.samples.some((s) => s.labels.client !== undefined)).toBe(false);
    // Node's process metrics are there.
    expect(scrape.types.get('process_cpu_user_seconds_total')).toBe('counter');
    expect(scrape.types.get('nodejs_eventloop_lag_seconds')).toBe('gauge');
  });

  it('labels clients only when asked, never one that failed to authenticate, and at most maxClients of them', async () => {
    const metrics = createMetrics();
    const observe = httpObserver(metrics, { clientLabel: true, maxClients: 2 });
    for (const clientId of ['a', 'b', 'c', 'd', 'a']) observe(answer({ clientId }));
    observe(answer({ status: 401, errorCode: 'invalid_client', reason: 'unknown_client', clientId: 'made-up', outcome: null }));
    const scrape = parseScrape(await metrics.registry.metrics());
    const clients = new Set(scrape.samples.filter((s) => s.name === 'tokenctl_client_requests_total').map((s) => s.labels.client));
    expect(clients).toEqual(new Set(['a', 'b', 'other']));
    expect(sum(scrape, 'tokenctl_client_requests_total', { client: 'a' })).toBe(2);
    expect(sum(scrape, 'tokenctl_client_requests_total', { client: 'other' })).toBe(2);
  });
});

describe('the store metrics', () => {
  it('time every store operation the engine calls, count failures by kind, and read through properties', async () => {
    const metrics = createMetrics();
    const memory = new MemoryStore();
    const store = instrumentStore(memory, metrics);
    const { engine } = makeEngine({ store });
    await addClient(store, { id: 'app' });
    const tokens = await engine.issue({ clientId: 'app', username: 'alice', scope: 'read' });
    expect((await engine.inspect({ token: tokens.access_token })).verdict).toBeDefined();
    expect(store.location).toBe(memory.location);

    const failing = instrumentStore(
      Object.assign(Object.create(memory) as TokenStore, { ping: () => Promise.reject(new StoreUnavailableError('down')) }),
      metrics,
    );
    await expect(failing.ping()).rejects.toThrow(StoreUnavailableError);
    const scrape = parseScrape(await metrics.registry.metrics());
    expect(sum(scrape, 'tokenctl_store_operation_duration_seconds_count', { operation: 'createClient' })).toBe(1);
    expect(sum(scrape, 'tokenctl_store_operation_duration_seconds_count', { operation: 'insertTokens' })).toBeGreaterThanOrEqual(1);
    expect(sum(scrape, 'tokenctl_store_operation_duration_seconds_count', { operation: 'findTokenByDigest' })).toBeGreaterThanOrEqual(1);
    expect(sum(scrape, 'tokenctl_store_errors_total', { operation: 'ping', kind: 'unavailable' })).toBe(1);
    // An operation never called has no series.
    expect(scrape.samples.some((s) => s.labels.operation === 'purgeBatch')).toBe(false);
  });

  it('count commit batches and row-cache lookups, and read the pool at each scrape', async () => {
    const pool = { total: 8, idle: 3, waiting: 2 };
    const observability = processObservability({ metrics: { host: '127.0.0.1', port: 0, clientLabel: false, maxClients: 1 }, trace: false });
    observability.instrumentStore(Object.assign(new MemoryStore(), { poolState: () => pool }));
    observability.storeObserver!.commitBatch!(3);
    observability.storeObserver!.commitBatch!(40);
    for (const hit of [true, true, true, false]) observability.storeObserver!.rowCache!(hit);
    let scrape = parseScrape(await observability.metrics!.registry.metrics());
    expect(sum(scrape, 'tokenctl_store_commit_batch_size_count')).toBe(2);
    expect(sum(scrape, 'tokenctl_store_commit_batch_size_sum')).toBe(43);
    expect(sum(scrape, 'tokenctl_store_row_cache_lookups_total', { result: 'hit' })).toBe(3);
    expect(sum(scrape, 'tokenctl_store_pool_in_use')).toBe(5);
    expect(sum(scrape, 'tokenctl_store_pool_waiting')).toBe(2);
    pool.waiting = 0;
    scrape = parseScrape(await observability.metrics!.registry.metrics());
    expect(sum(scrape, 'tokenctl_store_pool_waiting')).toBe(0);
  });
});

describe('the readiness gauge', () => {
  it('tokenctl_ready: 0 before a server watches, then what /health/ready would answer at each scrape', async () => {
    const observability = processObservability({ metrics: { host: '127.0.0.1', port: 0, clientLabel: false, maxClients: 1 }, trace: false });
    const store = observability.instrumentStore(new MemoryStore());
    const ready = async () => sum(parseScrape(await observability.metrics!.registry.metrics()), 'tokenctl_ready');
    expect(await ready()).toBe(0);
    let failing = false;
    const readiness = new Readiness({ ping: async () => (failing ? Promise.reject(new Error('down')) : store.ping()) });
    observability.watchReadiness(readiness);
    expect(await ready()).toBe(1);
    failing = true;
    expect(await ready()).toBe(0);
    failing = false;
    expect(await ready()).toBe(1);
    readiness.drain();
    expect(await ready()).toBe(0);
  });
});

describe('the metrics listener', () => {
  let listener: MetricsListener | undefined;
  afterEach(async () => listener?.close());

  it('answers GET /metrics in the Prometheus text format, 404 elsewhere, 503 when the source fails', async () => {
    const metrics = createMetrics();
    httpObserver(metrics)(answer({}));
    let fail = false;
    listener = await startMetricsListener('127.0.0.1', 0, async () => {
      if (fail) throw new Error('a worker did not answer');
      return { contentType: metrics.registry.contentType, body: await metrics.registry.metrics() };
    });
    expect(listener.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const res = await fetch(listener.url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(sum(parseScrape(await res.text()), 'tokenctl_http_requests_total')).toBe(1);
    expect((await fetch(listener.url.replace('/metrics', '/'))).status).toBe(404);
    fail = true;
    const failed = await fetch(listener.url);
    expect(failed.status).toBe(503);
    expect(await failed.text()).toMatch(/did not answer/);
  });

  it('says which port is taken', async () => {
    const metrics = createMetrics();
    const source = async () => ({ contentType: metrics.registry.contentType, body: await metrics.registry.metrics() });
    listener = await startMetricsListener('127.0.0.1', 0, source);
    const port = Number(new URL(listener.url).port);
    await expect(startMetricsListener('127.0.0.1', port, source)).rejects.toThrow(`metrics: port ${port} on 127.0.0.1 is already in use`);
    await expect(startMetricsListener('127.0.0.1', port, source)).rejects.toMatchObject({ name: 'MetricsListenError', code: 'address_in_use', kind: 'failure' });
  });
});
