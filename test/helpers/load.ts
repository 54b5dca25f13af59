import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../../src/engine/clock.js';
import { BIN, ROOT } from './cli.js';

/**
 * Helpers for the reliability tests (test/reliability): the real `tokenctl serve` as a child
 * process that can be SIGKILLed, bounded load loops, and polling with a deadline. Every loop here
 * is bounded in count and in time; nothing sleeps for timing.
 */

/** A clock for an in-process engine that shares a store with real processes: the system time. */
export class SystemTimeClock extends ManualClock {
  override now(): number {
    return Date.now();
  }
}

/** Every child started here, so that a test file can kill what is left in afterAll. */
const children = new Set<ChildProcess>();

/** Kills (SIGKILL) every child started here that is still running, and waits (at most 5 s) for them to exit. */
export async function killAllChildren(): Promise<void> {
  const running = [...children].filter((child) => child.exitCode === null && child.signalCode === null && child.pid !== undefined);
  const exited = running.map((child) => new Promise<void>((resolve) => child.once('exit', () => resolve())));
  for (const child of running) child.kill('SIGKILL');
  children.clear();
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([Promise.all(exited), new Promise<void>((resolve) => (timer = setTimeout(resolve, 5_000)))]);
  clearTimeout(timer);
}

function serveEnv(home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', HOME: home, XDG_DATA_HOME: join(home, 'data') };
  for (const key of ['TOKENCTL_DB', 'TOKENCTL_ISSUER', 'TOKENCTL_NODE', 'FORCE_COLOR', 'TOKENCTL_DEBUG', 'NODE_OPTIONS']) delete env[key];
  return env;
}

export interface ServeProcess {
  child: ChildProcess;
  /** `http://127.0.0.1:<port>`. */
  url: string;
  port: number;
  stdout(): string;
  stderr(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Sends `signal` (by the child's pid) and resolves when it has exited. */
  kill(signal: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Starts `node bin/run.js serve --host 127.0.0.1 --port 0 …args` and resolves once it printed
 * `listening on <URL>`. `umask` (octal string) runs it under that umask, through sh.
 */
export function startServe(args: string[], options: { timeoutMs?: number; umask?: string } = {}): Promise<ServeProcess> {
  if (!existsSync(join(ROOT, 'dist/commands/serve.js')) || !existsSync(join(ROOT, 'oclif.manifest.json'))) {
    throw new Error('tokenctl is not built: run `npm run build` before these tests');
  }
  const home = mkdtempSync(join(tmpdir(), 'tokenctl-serve-home-'));
  const argv = [BIN, 'serve', '--host', '127.0.0.1', '--port', '0', ...args];
  const child =
    options.umask === undefined
      ? spawn(process.execPath, argv, { cwd: home, env: serveEnv(home), stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn('sh', ['-c', `umask ${options.umask} && exec "$0" "$@"`, process.execPath, ...argv], { cwd: home, env: serveEnv(home), stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  // Should the test process end first (a failed run), the child and its directory go with it.
  const cleanupOnExit = (): void => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    rmSync(home, { recursive: true, force: true });
  };
  process.once('exit', cleanupOnExit);
  let out = '';
  let err = '';
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => {
      children.delete(child);
      process.off('exit', cleanupOnExit);
      rmSync(home, { recursive: true, force: true });
      resolve({ code, signal });
    }),
  );
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`serve did not print "listening on" within ${options.timeoutMs ?? 20_000} ms:\n${out}\n${err}`));
    }, options.timeoutMs ?? 20_000);
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      const m = /^listening on (http:\/\/127\.0\.0\.1:(\d+))$/m.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({
          child,
          url: m[1]!,
          port: Number(m[2]),
          stdout: () => out,
          stderr: () => err,
          exited,
          kill(signal) {
            if (child.exitCode === null && child.signalCode === null) child.kill(signal);
            return exited;
          },
        });
      }
    });
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`serve exited (${code ?? signal}) before listening:\n${out}\n--- stderr:\n${err}`));
    });
  });
}

/** SIGTERM (a graceful stop), and SIGKILL if it has not exited 5 s later. */
export async function stopServe(serve: ServeProcess): Promise<void> {
  const killer = setTimeout(() => serve.child.kill('SIGKILL'), 5_000);
  await serve.kill('SIGTERM');
  clearTimeout(killer);
}

/**
 * Runs `task(i)` for i = 0, 1, … with at most `concurrency` at once, until `count` tasks were
 * started, `stop()` says so, or `deadlineMs` has passed. A task's rejection is collected, not
 * thrown. Resolves when every started task has settled.
 */
export async function bounded(
  options: { concurrency: number; count: number; deadlineMs: number; stop?: () => boolean },
  task: (i: number) => Promise<void>,
): Promise<{ started: number; errors: unknown[] }> {
  const deadline = Date.now() + options.deadlineMs;
  let next = 0;
  const errors: unknown[] = [];
  const worker = async (): Promise<void> => {
    while (next < options.count && Date.now() < deadline && !(options.stop?.() ?? false)) {
      const i = next++;
      try {
        await task(i);
      } catch (error) {
        errors.push(error);
      }
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  return { started: next, errors };
}

/** Polls `condition` every few ms until it holds; rejects after `timeoutMs` with `what`. */
export async function until(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** A POST of a form over fetch; the parsed JSON (or null) with the status. */
export async function post(
  url: string,
  form: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown> | null; text: string }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form).toString(),
  });
  const text = await res.text();
  let body: Record<string, unknown> | null = null;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    /* not JSON: the caller asserts on text */
  }
  return { status: res.status, body, text };
}

/** A temporary directory removed by the returned function, or when the test process exits. */
export function tempDir(prefix: string): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const cleanup = (): void => rmSync(dir, { recursive: true, force: true });
  // A filtered run (vitest -t) may skip the afterAll that would call cleanup.
  process.once('exit', cleanup);
  return { dir, cleanup };
}
