import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request, type OutgoingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../../src/engine/clock.js';
import { Engine } from '../../src/engine/engine.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { BIN, ROOT } from './cli.js';
import { withoutInheritedSettings } from './env.js';

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
/** The children started as leaders of a process group of their own (`processGroup`). */
const groupLeaders = new WeakSet<ChildProcess>();

/** SIGKILL to `child`, or to its whole process group (its `serve --workers` workers with it) when it leads one. */
function killChild(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  if (groupLeaders.has(child)) {
    try {
      process.kill(-child.pid, signal);
    } catch {
      /* the group is gone already */
    }
  } else {
    child.kill(signal);
  }
}

/** Kills (SIGKILL) every child started here that is still running, and waits (at most 5 s) for them to exit. */
export async function killAllChildren(): Promise<void> {
  const running = [...children].filter((child) => child.exitCode === null && child.signalCode === null && child.pid !== undefined);
  const exited = running.map((child) => new Promise<void>((resolve) => child.once('exit', () => resolve())));
  for (const child of running) killChild(child, 'SIGKILL');
  children.clear();
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([Promise.all(exited), new Promise<void>((resolve) => (timer = setTimeout(resolve, 5_000)))]);
  clearTimeout(timer);
}

function serveEnv(home: string): NodeJS.ProcessEnv {
  return { ...withoutInheritedSettings(), NO_COLOR: '1', HOME: home, XDG_DATA_HOME: join(home, 'data') };
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
  /**
   * Only with `processGroup`: sends `signal` to the whole process group at once (with
   * `--workers N`, the primary and every worker), and resolves when the primary has exited.
   */
  killGroup(signal: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Starts `node bin/run.js serve --host 127.0.0.1 --port 0 …args` and resolves once it printed
 * `listening on <URL>`. `umask` (octal string) runs it under that umask, `nofile` under that
 * open files limit (`ulimit -n`), through sh.
 * `processGroup` starts it as the leader of a process group of its own (detached), so that
 * `killGroup` reaches the workers of `--workers N` (node:cluster children of the primary) in the
 * same instant as the primary; it is also what killAllChildren and an early exit of the test
 * process kill then. Without it, a SIGKILL reaches the primary alone, and its workers stop
 * gracefully on losing it: not a crash.
 */
export function startServe(args: string[], options: { timeoutMs?: number; umask?: string; nofile?: number; processGroup?: boolean } = {}): Promise<ServeProcess> {
  if (!existsSync(join(ROOT, 'dist/commands/serve.js')) || !existsSync(join(ROOT, 'oclif.manifest.json'))) {
    throw new Error('tokenctl is not built: run `npm run build` before these tests');
  }
  const home = mkdtempSync(join(tmpdir(), 'tokenctl-serve-home-'));
  const argv = [BIN, 'serve', '--host', '127.0.0.1', '--port', '0', ...args];
  const spawnOptions = { cwd: home, env: serveEnv(home), stdio: ['ignore', 'pipe', 'pipe'] as ('ignore' | 'pipe')[], detached: options.processGroup === true };
  const shell = [options.umask === undefined ? '' : `umask ${options.umask} && `, options.nofile === undefined ? '' : `ulimit -n ${options.nofile} && `].join('');
  const child = shell === '' ? spawn(process.execPath, argv, spawnOptions) : spawn('sh', ['-c', `${shell}exec "$0" "$@"`, process.execPath, ...argv], spawnOptions);
  children.add(child);
  if (options.processGroup === true) groupLeaders.add(child);
  // Should the test process end first (a failed run), the child and its directory go with it.
  const cleanupOnExit = (): void => {
    killChild(child, 'SIGKILL');
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
      killChild(child, 'SIGKILL');
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
          killGroup(signal) {
            if (!groupLeaders.has(child)) throw new Error('killGroup needs startServe(…, { processGroup: true })');
            killChild(child, signal);
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
  const killer = setTimeout(() => killChild(serve.child, 'SIGKILL'), 5_000);
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

/** One request log line of `serve --log-level info` (JSON on stderr; pino adds the pid of the process that answered). */
export interface RequestLine {
  pid: number;
  reqId: string;
  method: string;
  path: string;
  status: number;
  client_id?: string;
  jti?: string;
  error?: string;
}

/**
 * The request log lines `serve` has written to stderr so far (only with `--log-level info` or
 * finer), from character `from` of its stderr on. Every worker of `--workers N` writes to the
 * same stderr; each line names the pid of the process that answered, the only place where the
 * worker shows: the answers themselves are the same whichever worker gives them.
 */
export function requestLines(serve: ServeProcess, from = 0): RequestLine[] {
  const text = serve.stderr();
  const complete = text.slice(from, text.lastIndexOf('\n') + 1);
  const lines: RequestLine[] = [];
  for (const line of complete.split('\n')) {
    if (!line.startsWith('{')) continue;
    const parsed = JSON.parse(line) as Partial<RequestLine> & { msg?: string };
    if (parsed.msg === 'request') lines.push(parsed as RequestLine);
  }
  return lines;
}

/** Waits until `count` request lines for `path` have been logged from character `from` of stderr on, and returns them. */
export async function awaitRequestLines(serve: ServeProcess, from: number, path: string, count: number, timeoutMs = 5_000): Promise<RequestLine[]> {
  let lines: RequestLine[] = [];
  await until(
    () => (lines = requestLines(serve, from).filter((l) => l.path === path)).length >= count,
    timeoutMs,
    `${count} request log lines for ${path} (have ${lines.length})`,
  );
  return lines;
}

export interface Answer {
  status: number;
  body: Record<string, unknown> | null;
  text: string;
  /** The connection it came over. */
  socket: Socket;
}

/**
 * One HTTP/1.1 request over node:http: through `agent` (a keep-alive agent holds the connection,
 * and so the worker, between requests), or with `agent: false` on a connection of its own with
 * `Connection: close`, which the primary of `serve --workers N` hands to the next worker in turn.
 * Bounded: 10 s, then it fails.
 */
export function httpRequest(
  url: string,
  options: { method?: string; form?: Record<string, string>; headers?: Record<string, string>; agent: Agent | false },
): Promise<Answer> {
  const body = options.form === undefined ? undefined : new URLSearchParams(options.form).toString();
  const headers: OutgoingHttpHeaders = { ...options.headers };
  if (body !== undefined) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    headers['content-length'] = Buffer.byteLength(body);
  }
  if (options.agent === false) headers.connection = 'close';
  return new Promise((resolve, reject) => {
    let socket: Socket | undefined;
    const req = request(url, { method: options.method ?? (body === undefined ? 'GET' : 'POST'), agent: options.agent, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d: string) => (text += d));
      res.on('error', reject);
      res.on('end', () => {
        let parsed: Record<string, unknown> | null = null;
        try {
          parsed = JSON.parse(text) as Record<string, unknown>;
        } catch {
          /* not JSON: the caller asserts on text */
        }
        resolve({ status: res.statusCode ?? 0, body: parsed, text, socket: socket! });
      });
    });
    req.on('socket', (s: Socket) => (socket = s));
    req.setTimeout(10_000, () => req.destroy(new Error(`no answer to ${url} within 10 s`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** A POST of a form on a connection of its own (`Connection: close`). */
export function postOnce(url: string, form: Record<string, string>, headers: Record<string, string> = {}): Promise<Answer> {
  return httpRequest(url, { form, headers, agent: false });
}

/**
 * One keep-alive connection to `serve`, and the pid of the process that answers on it (with
 * `--workers N`, one worker: the primary hands each accepted connection to one worker, which
 * answers everything sent on it). Every request checks that it went over that same connection,
 * so that an answer can never silently come from another worker over a new connection.
 */
export interface PinnedConnection {
  pid: number;
  post(path: string, form: Record<string, string>, headers?: Record<string, string>): Promise<Answer>;
  close(): void;
}

let probes = 0;

/**
 * Opens connections to `serve` (which must log at info) until one answers from each of `workers`
 * different processes, and returns one per process. Each connection is identified by a GET of a
 * path of its own (`/probe/<n>`, a 404 whose log line names the path and the pid). At most
 * 16 × workers connections are tried.
 */
export async function pinConnections(serve: ServeProcess, workers: number): Promise<PinnedConnection[]> {
  const pinned = new Map<number, PinnedConnection>();
  for (let attempt = 0; attempt < 16 * workers && pinned.size < workers; attempt++) {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const path = `/probe/${process.pid}-${++probes}`;
    const from = serve.stderr().length;
    const probe = await httpRequest(serve.url + path, { agent });
    if (probe.status !== 404) throw new Error(`probe ${path} answered ${probe.status} ${probe.text}`);
    const [line] = await awaitRequestLines(serve, from, path, 1);
    const pid = line!.pid;
    if (pinned.has(pid)) {
      agent.destroy();
      continue;
    }
    const socket = probe.socket;
    pinned.set(pid, {
      pid,
      async post(p, form, headers = {}) {
        const answer = await httpRequest(serve.url + p, { form, headers, agent });
        if (answer.socket !== socket) throw new Error(`the connection pinned to process ${pid} was replaced: this answer may come from another process`);
        return answer;
      },
      close: () => agent.destroy(),
    });
  }
  if (pinned.size < workers) {
    for (const c of pinned.values()) c.close();
    throw new Error(`${16 * workers} connections reached only ${pinned.size} of ${workers} processes`);
  }
  return [...pinned.values()];
}

/** Whether process `pid` is gone (or a zombie waiting to be reaped: it runs no more code). */
export function processGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
  try {
    // Linux: the state is the field after the parenthesised command name.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return false;
  }
}

/**
 * `tokenctl serve --log-level warn` on a new SQLite store holding one confidential client,
 * `victim`, with `secret` (made through the engine before the server starts). `stop` ends the
 * server and any child left, and removes the store.
 */
export async function serveOneClient(prefix: string, secret: string): Promise<{ server: ServeProcess; stop: () => Promise<void> }> {
  const tmp = tempDir(prefix);
  try {
    const db = join(tmp.dir, 'tokens.db');
    const store = await SqliteStore.open(db);
    try {
      await new Engine({ store, clock: new SystemTimeClock() }).createClient({ id: 'victim', name: 'victim', secret }, 'cli:test');
    } finally {
      await store.close();
    }
    const server = await startServe(['--db', db, '--log-level', 'warn']);
    return {
      server,
      stop: async () => {
        await server.kill('SIGTERM');
        await killAllChildren();
        tmp.cleanup();
      },
    };
  } catch (error) {
    tmp.cleanup();
    throw error;
  }
}
