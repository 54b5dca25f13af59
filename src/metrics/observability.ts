import cluster from 'node:cluster';
import { AggregatorRegistry } from 'prom-client';
import type { AnswerObserver } from '../http/observer.js';
import type { Readiness } from '../http/readiness.js';
import type { StoreObserver, TokenStore } from '../store/store.js';
import { httpObserver } from './http-observer.js';
import { startMetricsListener, type MetricsListener, type MetricsSource } from './listener.js';
import { createMetrics, type TokenctlMetrics } from './metrics.js';
import { registerOutboxGauges } from './outbox-gauges.js';
import { instrumentStore, storeObserver } from './store-metrics.js';
import { traceAnswers, traceStore } from './tracing.js';

/** `serve`'s observability flags, as plain data (sent to each worker of `--workers N`). */
export interface ObservabilitySettings {
  /** `--metrics-port` and friends; undefined: no metrics at all (nothing is counted). */
  metrics?: {
    host: string;
    /** 0 picks a free port. */
    port: number;
    clientLabel: boolean;
    maxClients: number;
  };
  /** `--trace`: OpenTelemetry spans around the three endpoints and their store calls. */
  trace: boolean;
}

/** What one serving process wires in: the store's observer, the store wrapper, the HTTP observer. */
export interface ProcessObservability {
  metrics?: TokenctlMetrics;
  /** For `openStore(…, { observer })`. */
  storeObserver?: StoreObserver;
  /** For `buildServer({ observer })`. */
  answerObserver?: AnswerObserver;
  /** The store the engine should use: timed and/or traced. */
  instrumentStore(store: TokenStore): TokenStore;
  /** What the readiness gauge asks at each scrape: the server's own `/health/ready` check. */
  watchReadiness(readiness: Readiness): void;
}

/**
 * The observability of one serving process (the single process, or one worker). Its pool
 * gauges read the store it is given later (`instrumentStore`).
 */
export function processObservability(settings: ObservabilitySettings): ProcessObservability {
  let store: TokenStore | undefined;
  let readiness: Readiness | undefined;
  const ready = async (): Promise<boolean | undefined> => (readiness === undefined ? undefined : (await readiness.check()) === null);
  const metrics = settings.metrics ? createMetrics(() => store?.poolState?.(), ready) : undefined;
  if (metrics) registerOutboxGauges(metrics.registry, () => store?.listReceivers());
  const observers: AnswerObserver[] = [];
  if (metrics) observers.push(httpObserver(metrics, { clientLabel: settings.metrics!.clientLabel, maxClients: settings.metrics!.maxClients }));
  if (settings.trace) observers.push(traceAnswers());
  const [first, second] = observers;
  return {
    metrics,
    storeObserver: metrics && storeObserver(metrics),
    answerObserver: second && first ? (record) => (first(record), second(record)) : first,
    instrumentStore(opened) {
      store = opened;
      let served = settings.trace ? traceStore(opened) : opened;
      if (metrics) served = instrumentStore(served, metrics);
      return served;
    },
    watchReadiness(watched) {
      readiness = watched;
    },
  };
}

/**
 * `tokenctl serve`'s observability, made by the command before the store opens: for a single
 * process, its {@link ProcessObservability} (`local`); with workers, each worker makes its own and
 * this process (the primary) only serves their aggregate.
 */
export class ServeObservability {
  readonly local?: ProcessObservability;

  constructor(
    readonly settings: ObservabilitySettings,
    readonly workers: number,
  ) {
    if (workers <= 1) this.local = processObservability(settings);
    // The primary must listen for the workers' answers before any scrape asks them.
    else if (settings.metrics) new AggregatorRegistry();
  }

  /** Starts the metrics listener, when asked for: this process's registry, or the workers' aggregate. */
  async listen(): Promise<MetricsListener | undefined> {
    const asked = this.settings.metrics;
    if (!asked) return undefined;
    const registry = this.local?.metrics?.registry;
    const source: MetricsSource = registry
      ? async () => ({ contentType: registry.contentType, body: await registry.metrics() })
      : clusterSource();
    return startMetricsListener(asked.host, asked.port, source);
  }
}

/** The primary of `--workers N`: every worker's registry, summed by prom-client (over node:cluster's IPC). */
function clusterSource(): MetricsSource {
  const aggregator = new AggregatorRegistry();
  return async () => ({ contentType: aggregator.contentType, body: await aggregator.clusterMetrics() });
}

/** In a worker of `--workers N`: the worker's observability, its registry answering the primary's requests. */
export function workerObservability(settings: ObservabilitySettings): ProcessObservability {
  const observability = processObservability(settings);
  if (observability.metrics && cluster.isWorker) {
    AggregatorRegistry.setRegistries([observability.metrics.registry]);
    new AggregatorRegistry(); // installs the worker's listener for the primary's requests
  }
  return observability;
}
