import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import { FastCounter, FastHistogram } from './bound.js';
import type { PoolState } from '../store/store.js';

/**
 * Every metric tokenctl exports (docs/observability.md lists them), in one registry per process.
 * Labels are bounded: endpoints, status codes, error codes and reasons come from tokenctl's own
 * vocabularies, store operations are the TokenStore's method names, and the client label (off by
 * default) is capped. Nothing names or identifies a token.
 */
export interface TokenctlMetrics {
  registry: Registry;
  requests: FastCounter<'endpoint' | 'status' | 'outcome' | 'reason'>;
  requestDuration: FastHistogram;
  clientRequests: FastCounter<'client' | 'endpoint' | 'outcome'>;
  tokensRefreshed: FastCounter<'rotated'>;
  revocations: FastCounter<'kind'>;
  reuseDetections: FastCounter;
  reuseRevokedTokens: FastCounter;
  clientAuthFailures: FastCounter<'reason'>;
  storeDuration: FastHistogram;
  storeErrors: FastCounter<'operation' | 'kind'>;
  commitBatchSize: FastHistogram;
  rowCache: FastCounter<'result'>;
  /** Security events (docs/events.md): push deliveries settled by this process. */
  eventDeliveries: FastCounter<'outcome'>;
}

/** Seconds: from a cached introspection (well under a millisecond) to a request's 5 s database budget. */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
const BATCH_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512];

/**
 * A registry with tokenctl's metrics and Node's process metrics (`collectDefaultMetrics`).
 * `poolState` is read at each scrape (PostgreSQL; the gauges stay 0 for a store without a pool),
 * and `ready` is asked then as `/health/ready` would be (undefined: no server yet, reported as 0).
 */
export function createMetrics(poolState: () => PoolState | undefined = () => undefined, ready: () => Promise<boolean | undefined> = async () => undefined): TokenctlMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const registers = [registry];
  const poolGauge = (name: string, help: string, read: (state: PoolState) => number): Gauge =>
    new Gauge({
      name,
      help,
      registers,
      collect() {
        const state = poolState();
        this.set(state ? read(state) : 0);
      },
    });
  new Gauge({ name: 'tokenctl_server_processes', help: 'Processes whose metrics this scrape sums: 1, or the workers of serve --workers N that answered', registers }).set(1);
  new Gauge({
    name: 'tokenctl_ready',
    help: 'Whether /health/ready would answer 200 now (1) or 503 (0: draining, or the store does not answer a read); with --workers, 1 only when every worker is',
    registers,
    // With workers, the primary's aggregate: one worker not ready makes the node not ready.
    aggregator: 'min',
    async collect() {
      this.set((await ready()) === true ? 1 : 0);
    },
  });
  poolGauge('tokenctl_store_pool_in_use', 'PostgreSQL connections of this server checked out by a request (0 without PostgreSQL)', (s) => s.total - s.idle);
  poolGauge('tokenctl_store_pool_idle', 'PostgreSQL connections of this server open and idle', (s) => s.idle);
  poolGauge('tokenctl_store_pool_waiting', 'Requests waiting for a PostgreSQL connection', (s) => s.waiting);

  return {
    registry,
    requests: new FastCounter({
      name: 'tokenctl_http_requests_total',
      help: 'HTTP answers by endpoint, status, outcome (what the engine did, or the error code) and reason (why a token or client was refused)',
      labelNames: ['endpoint', 'status', 'outcome', 'reason'],
      registers,
    }),
    requestDuration: new FastHistogram({
      name: 'tokenctl_http_request_duration_seconds',
      help: 'From the first byte of a request to its answer, by endpoint and outcome class (ok, client_error, unauthorized, rate_limited, unavailable, server_error)',
      labelNames: ['endpoint', 'outcome'],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    clientRequests: new FastCounter({
      name: 'tokenctl_client_requests_total',
      help: 'Answers to authenticated clients, by client (only with serve --metrics-client-label; past --metrics-max-clients, client="other")',
      labelNames: ['client', 'endpoint', 'outcome'],
      registers,
    }),
    tokensRefreshed: new FastCounter({
      name: 'tokenctl_tokens_refreshed_total',
      help: 'Successful refreshes over HTTP; rotated="true" when a new refresh token was issued too',
      labelNames: ['rotated'],
      registers,
    }),
    revocations: new FastCounter({
      name: 'tokenctl_revocations_total',
      help: 'Revocations by the server, by kind: single (one token), grant (a refresh token revoked with its grant), reuse_detection (a grant revoked because a replaced refresh token came back); bulk revocation runs in the CLI process, not here',
      labelNames: ['kind'],
      registers,
    }),
    reuseDetections: new FastCounter({
      name: 'tokenctl_reuse_detections_total',
      help: 'Replaced refresh tokens presented again (their grant revoked)',
      registers,
    }),
    reuseRevokedTokens: new FastCounter({
      name: 'tokenctl_reuse_revoked_tokens_total',
      help: 'Tokens revoked with their grant on reuse detection',
      registers,
    }),
    clientAuthFailures: new FastCounter({
      name: 'tokenctl_client_auth_failures_total',
      help: 'Client authentication failures (401 invalid_client) by reason',
      labelNames: ['reason'],
      registers,
    }),
    storeDuration: new FastHistogram({
      name: 'tokenctl_store_operation_duration_seconds',
      help: 'Store calls made by the server, by operation (the TokenStore method)',
      labelNames: ['operation'],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    storeErrors: new FastCounter({
      name: 'tokenctl_store_errors_total',
      help: 'Store calls that failed, by operation and kind (unavailable: the database did not answer in time or at all)',
      labelNames: ['operation', 'kind'],
      registers,
    }),
    commitBatchSize: new FastHistogram({
      name: 'tokenctl_store_commit_batch_size',
      help: 'Writes committed together by one group commit',
      buckets: BATCH_BUCKETS,
      registers,
    }),
    rowCache: new FastCounter({
      name: 'tokenctl_store_row_cache_lookups_total',
      help: 'Reads answered by the kept-row cache (result="hit") or by the database ("miss")',
      labelNames: ['result'],
      registers,
    }),
    eventDeliveries: new FastCounter({
      name: 'tokenctl_event_deliveries_total',
      help: 'Security event pushes (RFC 8935) by this server, by outcome: delivered (202), retry (failed, tried again later), dead (given up: a dead letter)',
      labelNames: ['outcome'],
      registers,
    }),
  };
}
