import { ServeError } from './errors.js';
import type { Engine, EngineOptions } from '../engine/engine.js';
import type { EngineConfig } from '../engine/settings.js';
import { startWorkers } from './cluster.js';
import { startEventDelivery } from './event-delivery.js';
import { demoInstructions, prepareDemo } from './demo.js';
import { demoLoginInstructions, prepareDemoApp } from './demo-login.js';
import { isLoopback } from './transport.js';
import { waitForShutdownSignal } from './shutdown.js';
import { connectionCap, readDescriptors } from './descriptor-limit.js';
import { drain } from './drain.js';
import { Readiness } from '../http/readiness.js';
import { checkTrustProxy, requestDeadline, startServer } from './listen.js';
import { checkStoreWritable, watchStoreFile } from './store-watch.js';
import { chooseTransport, metricsListenerWarning, type TransportFlags } from './transport.js';
import { connectionBudgetWarning, type OpenStoreOptions } from '../store/open-store.js';
import type { ServeObservability } from '../metrics/observability.js';

export interface ServeSettings extends TransportFlags {
  port: number;
  /** Where `--tls-self-signed` keeps its certificate. */
  certDir: string;
  /**
   * The engine's settings given (`engine/settings.ts`), passed on as they are; the others take the
   * engine's defaults. Without `issuer`, the URL the server listens on.
   */
  engine: Partial<EngineConfig>;
  logLevel: string;
  /** Whether `--dev-login` was said explicitly (the engine's `devLogin` may come from `--demo` on loopback). */
  devLoginAsked?: boolean;
  /** Who acts, for the audit trail of `--demo`. */
  actor: string;
  /** `--workers`: processes serving the port (node:cluster); default 1, this process itself. */
  workers?: number;
  /** The store each worker opens (needed with more than one worker). */
  storeLocation?: string;
  /** How workers open the store (pool size, timeout), as the primary did. */
  storeOptions?: OpenStoreOptions;
  /** `--max-connections`: open connections at once, per process (default 1000); lowered to fit the open files limit. */
  maxConnections?: number;
  /** `--trust-proxy`: the proxies whose `X-Forwarded-For` names the client; none by default. */
  trustProxy?: string[];
  /** Where this process writes its request log lines (the command chooses the format). */
  logStream: NodeJS.WritableStream;
  /** Metrics and tracing (`--metrics-port`, `--trace`); none without. */
  observability?: ServeObservability;
  /** `--drain`: how long SIGTERM keeps serving while readiness answers 503 (contract 6); 0 to skip. */
  drainMs: number;
}

/** How `serve` talks to its operator: stdout lines, warnings and notes on stderr. */
export interface ServeOutput {
  line(text: string): void;
  warn(text: string): void;
  note(text: string): void;
}

/**
 * `tokenctl serve` from start to stop (contract 3): choose the transport (refusing plain HTTP
 * off loopback before opening anything), open the engine, listen, set up the demo if asked,
 * print `listening on <URL>`, and on SIGTERM drain (contract 6) and stop gracefully; SIGINT (a
 * terminal's Ctrl-C) stops without the drain. The caller closes the store.
 */
export async function runServe(settings: ServeSettings, openEngine: (options: Partial<EngineOptions>) => Promise<Engine>, out: ServeOutput): Promise<void> {
  checkTrustProxy(settings.trustProxy);
  const transport = await chooseTransport(settings, settings.certDir);
  // Without an issuer given, the engine's default stands until the server learns the URL it listens on.
  const issuerFromUrl = settings.engine.issuer === undefined;
  const engineOptions = settings.engine;
  const engine = await openEngine(engineOptions);
  await checkStoreWritable(engine);
  if (transport.warning) out.warn(transport.warning);
  for (const warning of loginWarnings(settings)) out.warn(warning);
  if (settings.demo && engine.config.devLogin) await prepareDemoApp(engine, settings.actor);
  // After the store is open, so that its descriptors are counted; workers inherit the same limit.
  const cap = connectionCap(settings.maxConnections, readDescriptors(), settings.storeOptions?.poolSize);
  if (cap.warning) out.warn(cap.warning);
  if (cap.note) out.note(cap.note);
  if (settings.storeLocation !== undefined) {
    const budget = await connectionBudgetWarning(settings.storeLocation, settings.storeOptions?.poolSize, settings.workers ?? 1);
    if (budget) out.warn(budget);
  }
  const metrics = await settings.observability?.listen();
  if (metrics) out.note(`metrics on ${metrics.url}`);
  const metricsWarning = metricsListenerWarning(settings.observability?.settings.metrics);
  if (metricsWarning) out.warn(metricsWarning);
  // A store file deleted or replaced under the server: stop, with the reason (see SECURITY.md).
  const storeWatch = watchStoreFile(settings.storeLocation ?? engine.store.location);

  // Before anything is printed: whoever reads "listening on" may signal at once.
  let force = (): void => process.exit(130);
  let skipDrain = (): void => undefined;
  const drainSkipped = new Promise<void>((resolve) => (skipDrain = resolve));
  const stopSignal = waitForShutdownSignal(() => (skipDrain(), force()));
  const certFile = transport.tls?.certFile;
  const workerCount = settings.workers ?? 1;

  if (workerCount > 1) {
    if (settings.storeLocation === undefined) throw new Error('serve --workers needs the store location');
    // Done once, here: every worker then opens the store as it is.
    const demo = settings.demo ? await prepareDemo(engine, settings.actor) : undefined;
    if (!demo) await warnWithoutClients(engine, settings, certFile, out);
    let fatal = (_message: string): void => undefined;
    const failed = new Promise<string>((resolve) => (fatal = resolve));
    const workers = await startWorkers(
      workerCount,
      {
        type: 'settings',
        storeLocation: settings.storeLocation,
        storeOptions: settings.storeOptions ?? {},
        engine: engineOptions,
        host: settings.host,
        port: settings.port,
        tls: transport.tls && { key: transport.tls.key, cert: transport.tls.cert },
        issuerFromUrl,
        logLevel: settings.logLevel,
        maxConnections: cap.maxConnections,
        trustProxy: settings.trustProxy,
        observability: settings.observability?.settings,
        drainMs: settings.drainMs,
      },
      (message) => fatal(message),
    );
    force = () => workers.force();
    if (demo) out.line(demoInstructions(demo, workers.url, certFile));
    if (demo && engine.config.devLogin) out.line(demoLoginInstructions(workers.url, certFile));
    out.line(`listening on ${workers.url}`);
    const stop = await Promise.race([
      stopSignal.then((signal) => ({ signal })),
      failed.then((message) => ({ message, code: 'worker_failed' })),
      storeWatch.changed.then((message) => ({ message, code: 'store_replaced' })),
    ]);
    storeWatch.stop();
    if ('signal' in stop) {
      out.note(drainNote(stop.signal, settings.drainMs, `${workerCount} workers`));
      if (stop.signal === 'SIGTERM') await drain(() => workers.drain(), settings.drainMs, drainSkipped);
    }
    await metrics?.close();
    await workers.stop();
    if ('message' in stop) throw storeError(stop.message, stop.code);
    return;
  }

  const readiness = new Readiness(engine.store, settings.storeOptions?.statementTimeoutMs);
  settings.observability?.local?.watchReadiness(readiness);
  const server = await startServer({
    engine,
    readiness,
    requestDeadlineMs: requestDeadline(settings.storeOptions),
    observer: settings.observability?.local?.answerObserver,
    host: settings.host,
    port: settings.port,
    tls: transport.tls,
    issuerFromUrl,
    logger: { level: settings.logLevel, stream: settings.logStream },
    connections: { maxConnections: cap.maxConnections },
    trustProxy: settings.trustProxy,
  });
  force = () => server.app.server.closeAllConnections();
  const delivery = await startEventDelivery(engine, server.app.log, settings.observability?.local?.metrics);

  if (settings.demo) {
    out.line(demoInstructions(await prepareDemo(engine, settings.actor), server.url, certFile));
    if (engine.config.devLogin) out.line(demoLoginInstructions(server.url, certFile));
  } else {
    await warnWithoutClients(engine, settings, certFile, out);
  }
  out.line(`listening on ${server.url}`);

  const stop = await Promise.race([stopSignal.then((signal) => ({ signal })), storeWatch.changed.then((message) => ({ message }))]);
  storeWatch.stop();
  if ('signal' in stop) {
    out.note(drainNote(stop.signal, settings.drainMs));
    if (stop.signal === 'SIGTERM') await drain(() => readiness.drain(), settings.drainMs, drainSkipped);
  }
  await metrics?.close();
  await Promise.all([server.close(), delivery.stop()]);
  if ('message' in stop) throw storeError(stop.message, 'store_replaced');
}

/** Contract 5: the development login off loopback is said out loud; so is a demo that goes without it. */
function loginWarnings(settings: ServeSettings): string[] {
  const warnings: string[] = [];
  if (settings.engine.devLogin && !isLoopback(settings.host)) {
    warnings.push(`the development login (--dev-login) accepts any user name, and ${settings.host} is not a loopback address: anyone who reaches this server can log in as anyone`);
  }
  if (settings.demo && !settings.engine.devLogin && !settings.engine.loginUrl && !isLoopback(settings.host)) {
    warnings.push(`--demo on ${settings.host} (not loopback) has no login: add --dev-login to log in from an app with the development page, or --login-url for your own`);
  }
  return warnings;
}

function drainNote(signal: NodeJS.Signals, drainMs: number, where?: string): string {
  const rest = `finishing requests in flight${where === undefined ? '' : ` in ${where}`}, then stopping`;
  return signal === 'SIGTERM' && drainMs > 0 ? `${signal}: not ready; serving ${drainMs} ms more, then ${rest}` : `${signal}: ${rest}`;
}

function storeError(message: string, code: string): ServeError {
  return code === 'store_replaced'
    ? new ServeError(`${message}: stopped, so that no answer comes from a file other commands no longer see`, code, 'failure', 'start serve again on the store you mean')
    : new ServeError(message, code);
}

async function warnWithoutClients(engine: Engine, settings: ServeSettings, certFile: string | undefined, out: ServeOutput): Promise<void> {
  if ((await engine.listClients()).length === 0) {
    out.warn('the store has no clients yet: create one with "tokenctl client create --name app", or try "tokenctl serve --demo"');
  }
  if (settings.tlsSelfSigned && certFile) out.note(`certificate: ${certFile} (trust it with curl --cacert or tokenctl --ca)`);
}
