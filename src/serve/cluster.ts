import cluster, { type Worker } from 'node:cluster';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ServeError } from './errors.js';
import { closeUnacknowledgedHandoffs } from './handoff.js';
import type { WorkerCommand, WorkerReport, WorkerSettings } from './worker.js';

/**
 * bin/worker.js, which runs a worker from the same CLI bundle as the primary (and its code cache).
 * Two directories up from this module wherever it runs: the bundle (dist/main/), dist/serve/, src/serve/.
 */
function workerEntry(): string {
  const entry = fileURLToPath(new URL('../../bin/worker.js', import.meta.url));
  const bundle = fileURLToPath(new URL('../../dist/main/index.cjs', import.meta.url));
  for (const file of [entry, bundle]) {
    if (!existsSync(file)) throw new ServeError(`cannot start workers: ${file} is missing; rebuild tokenctl (npm run build)`, 'error');
  }
  return entry;
}

export interface Workers {
  /** The base URL all workers listen on (one port, shared through the primary). */
  url: string;
  /** Every worker's readiness answers 503 from now on (the drain of contract 6); they keep serving. */
  drain(): void;
  /** Asks every worker to finish its requests in flight and stop; resolves once all have exited. */
  stop(): Promise<void>;
  /** A second signal: workers close every connection at once. */
  force(): void;
}

/**
 * Starts `count` workers of `serve --workers N` (node:cluster) and resolves once every one of them
 * listens. A worker that fails to start fails the start of all of them. A worker that dies later
 * is replaced, unless workers die faster than one a second: then everything stops.
 */
export async function startWorkers(count: number, settings: WorkerSettings, onFatal: (message: string) => void): Promise<Workers> {
  cluster.setupPrimary({ exec: workerEntry(), args: [], silent: false });
  let stopping = false;
  let url = '';
  const workers = new Set<Worker>();
  let recentDeaths: number[] = [];

  const fork = (): Promise<string> =>
    new Promise((resolve, reject) => {
      const worker = cluster.fork();
      closeUnacknowledgedHandoffs(worker);
      workers.add(worker);
      let listening = false;
      worker.on('message', (message: WorkerReport) => {
        if (message?.type === 'ready') {
          worker.send(settings);
        } else if (message?.type === 'listening') {
          listening = true;
          resolve(message.url);
        } else if (message?.type === 'failed') {
          reject(new ServeError(`a worker could not start: ${message.message}`, 'worker_failed'));
        }
      });
      worker.once('exit', (code, signal) => {
        workers.delete(worker);
        if (!listening) {
          reject(new ServeError(`a worker exited before listening (${signal ?? `exit code ${code}`})`, 'worker_failed'));
          return;
        }
        if (stopping) return;
        const now = Date.now();
        recentDeaths = [...recentDeaths.filter((t) => now - t < 10_000), now];
        if (recentDeaths.length > Math.max(3, count)) {
          onFatal(`workers keep dying (the last: ${signal ?? `exit code ${code}`}); stopping`);
          return;
        }
        fork().catch((err: Error) => onFatal(err.message));
      });
    });

  const broadcast = (command: WorkerCommand): void => {
    for (const w of workers) if (w.isConnected()) w.send(command);
  };
  const allExited = (): Promise<void> =>
    Promise.all([...workers].map((w) => (w.isDead() ? undefined : new Promise<void>((resolve) => w.once('exit', () => resolve()))))).then(() => undefined);

  try {
    const urls = await Promise.all(Array.from({ length: count }, fork));
    url = urls[0]!;
  } catch (err) {
    stopping = true;
    for (const w of workers) w.kill('SIGTERM');
    await allExited();
    throw err;
  }

  return {
    url,
    drain: () => broadcast({ type: 'drain' }),
    stop: async () => {
      stopping = true;
      broadcast({ type: 'shutdown' });
      await allExited();
    },
    // A message, not a signal: a worker's own SIGTERM means "drain first", which this must not.
    force: () => broadcast({ type: 'force' }),
  };
}
