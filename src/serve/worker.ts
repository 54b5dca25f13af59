import { Engine, type EngineOptions } from '../engine/engine.js';
import type { ObservabilitySettings } from '../metrics/observability.js';
import { Readiness } from '../http/readiness.js';
import { openStore, type OpenStoreOptions } from '../store/open-store.js';
import { drain } from './drain.js';
import { startEventDelivery } from './event-delivery.js';
import { requestDeadline, startServer } from './listen.js';
import type { TlsMaterial } from './tls.js';

/** What the primary of `serve --workers N` sends each worker, over the IPC channel (never argv or env: it may hold a TLS key). */
export interface WorkerSettings {
  type: 'settings';
  storeLocation: string;
  storeOptions: OpenStoreOptions;
  engine: Omit<EngineOptions, 'store' | 'clock' | 'auth'>;
  host: string;
  port: number;
  tls?: TlsMaterial;
  issuerFromUrl: boolean;
  logLevel: string;
  maxConnections?: number;
  /** `--trust-proxy`, as the primary checked it. */
  trustProxy?: string[];
  /** Metrics and tracing, as the primary's flags asked. */
  observability?: ObservabilitySettings;
  /** `--drain`: how long a SIGTERM of its own keeps the worker serving while not ready. */
  drainMs: number;
}

/** Messages from a worker to the primary. */
export type WorkerReport = { type: 'ready' } | { type: 'listening'; url: string } | { type: 'failed'; message: string };

/** Messages from the primary to a worker besides its settings: not ready from now on, stop, or stop without waiting. */
export interface WorkerCommand {
  type: 'drain' | 'shutdown' | 'force';
}

/**
 * One worker of `serve --workers N` (node:cluster): opens its own connection to the store (no
 * token or revocation state lives in a worker, so every worker sees every commit at once),
 * listens on the port the primary shares, reports, and on the primary's word (or its own
 * SIGTERM/SIGINT, as a terminal's Ctrl-C or systemd sends to the whole process group) finishes the
 * requests in flight, closes the store and exits 0. Its own SIGTERM drains first, as the primary does.
 */
async function runWorker(settings: WorkerSettings): Promise<void> {
  const observability = settings.observability && (await import('../metrics/observability.js')).workerObservability(settings.observability);
  const store = await openStore(settings.storeLocation, { ...settings.storeOptions, observer: observability?.storeObserver });
  const engine = new Engine({ ...settings.engine, store: observability ? observability.instrumentStore(store) : store });
  const readiness = new Readiness(engine.store, settings.storeOptions.statementTimeoutMs);
  observability?.watchReadiness(readiness);
  const server = await startServer({
    engine,
    readiness,
    requestDeadlineMs: requestDeadline(settings.storeOptions),
    observer: observability?.answerObserver,
    host: settings.host,
    port: settings.port,
    tls: settings.tls,
    issuerFromUrl: settings.issuerFromUrl,
    logger: { level: settings.logLevel, stream: process.stderr },
    connections: { maxConnections: settings.maxConnections },
    trustProxy: settings.trustProxy,
  });
  const delivery = await startEventDelivery(engine, server.app.log, observability?.metrics);
  report({ type: 'listening', url: server.url });

  let stopping = false;
  let draining = false;
  let skipDrain = (): void => undefined;
  const drainSkipped = new Promise<void>((resolve) => (skipDrain = resolve));
  const stop = async (): Promise<void> => {
    skipDrain();
    if (stopping) return;
    stopping = true;
    try {
      await Promise.all([server.close(), delivery.stop()]);
    } finally {
      await store.close();
    }
    process.exit(0);
  };
  process.on('message', (message: WorkerCommand) => {
    if (message?.type === 'drain') readiness.drain();
    else if (message?.type === 'shutdown') void stop();
    else if (message?.type === 'force') {
      server.app.server.closeAllConnections();
      void stop();
    }
  });
  const onSignal = (signal: NodeJS.Signals): void => {
    // A second signal while draining or stopping: do not wait for the drain nor for slow clients.
    if (stopping || draining) {
      server.app.server.closeAllConnections();
      void stop();
    } else if (signal === 'SIGTERM' && settings.drainMs > 0) {
      draining = true;
      void drain(() => readiness.drain(), settings.drainMs, drainSkipped).then(stop);
    } else void stop();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  // Without the primary there is nobody to stop us: stop.
  process.on('disconnect', () => void stop());
}

function report(message: WorkerReport): void {
  process.send?.(message);
}

/**
 * The body of a worker process (bin/worker.js): waits for the primary's settings, then runs.
 * Reports `ready` only once it listens for them: a message sent earlier would find no listener.
 */
export function startWorkerProcess(): void {
  const onSettings = (message: WorkerSettings): void => {
    if (message?.type !== 'settings') return;
    process.off('message', onSettings);
    runWorker(message).catch((err: unknown) => {
      report({ type: 'failed', message: err instanceof Error ? err.message : String(err) });
      process.exit(1);
    });
  };
  process.on('message', onSettings);
  report({ type: 'ready' });
}
