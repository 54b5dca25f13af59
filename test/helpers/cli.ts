import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterAll } from 'vitest';
import { migrate } from '../../src/store/sqlite/index.js';
import { withoutInheritedSettings } from './env.js';

/** The repository root, and the real launcher every test runs. */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const BIN = join(ROOT, 'bin/run.js');

export interface CliResult {
  stdout: string;
  stderr: string;
  code: number;
  /** stdout parsed as the one JSON document it must be. */
  json<T = any>(): T; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export interface RunOptions {
  /** Extra environment (TOKENCTL_DB is not inherited: pass --db or set it here). */
  env?: Record<string, string | undefined>;
  /** Written to stdin, which is a pipe (never a TTY). */
  input?: string;
  timeoutMs?: number;
}

function assertBuilt(): void {
  if (!existsSync(join(ROOT, 'dist/commands')) || !existsSync(join(ROOT, 'oclif.manifest.json'))) {
    throw new Error('tokenctl is not built: run `npm run build` before these tests');
  }
}

/** A sandbox for the child: no colours, no inherited store, a private data directory. */
function childEnv(extra: RunOptions['env'], home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...withoutInheritedSettings(), NO_COLOR: '1', HOME: home, XDG_DATA_HOME: join(home, 'data') };
  for (const [key, value] of Object.entries(extra ?? {})) {
    if (value === undefined) delete env[key];
    else env[key] = value;
  }
  return env;
}

/**
 * Runs `node bin/run.js ...args` as a user would, without a terminal, and collects what it
 * printed and its exit code.
 */
export function tokenctl(args: string[], options: RunOptions = {}): Promise<CliResult> {
  assertBuilt();
  const home = sandboxHome();
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: home, env: childEnv(options.env, home), stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 20_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolvePromise({
        stdout,
        stderr,
        code: code ?? (signal ? 128 : 1),
        json() {
          try {
            return JSON.parse(stdout);
          } catch {
            throw new Error(`stdout is not one JSON document (exit ${code}):\n${stdout}\n--- stderr:\n${stderr}`);
          }
        },
      });
    });
    child.stdin.end(options.input ?? '');
  });
}

let home: string | undefined;
function sandboxHome(): string {
  home ??= mkdtempSync(join(tmpdir(), 'tokenctl-home-'));
  return home;
}

// Removed when the test file that imported this helper ends (registered on its root suite; a
// process 'exit' handler would not run in vitest's workers, which are reused or killed).
afterAll(() => {
  if (home !== undefined) rmSync(home, { recursive: true, force: true });
  home = undefined;
});

/** A store's directory and file, and tokenctl run on it. */
export interface TempStore {
  dir: string;
  db: string;
  /** Runs tokenctl on this store. */
  run(args: string[], options?: RunOptions): Promise<CliResult>;
  /** Runs with --json on this store and returns the parsed output, failing on a non-zero exit. */
  json<T = any>(args: string[], options?: RunOptions): Promise<T>; // eslint-disable-line @typescript-eslint/no-explicit-any
  cleanup(): void;
}

/**
 * A fresh directory with a store in it: an empty tokenctl store, as `client create` would make
 * (only serve, client create and migrate --to create a store). `{ create: false }`: no file yet.
 * `{ inProcess: true }`: commands run inside the test's process (`runCommand`, from the sources),
 * for tests that need no process of their own; otherwise each spawns the built binary.
 */
export function tempStore(options: { create?: boolean; inProcess?: boolean } = {}): TempStore {
  const dir = mkdtempSync(join(tmpdir(), 'tokenctl-test-'));
  const db = join(dir, 'tokens.db');
  if (options.create !== false) createEmptyStore(db);
  const runner = options.inProcess ? async (args: string[], o?: RunOptions) => (await import('./run-command.js')).runCommand(args, o) : tokenctl;
  const run = (args: string[], options?: RunOptions) => runner([...args, '--db', db], options);
  return {
    dir,
    db,
    run,
    async json(args, options) {
      const r = await run([...args, '--json'], options);
      if (r.code !== 0) throw new Error(`tokenctl ${args.join(' ')} exited ${r.code}:\n${r.stderr}`);
      return r.json();
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Makes an empty tokenctl SQLite store at `file`, synchronously. */
export function createEmptyStore(file: string): void {
  const db = new Database(file);
  try {
    db.pragma('journal_mode = WAL');
    migrate(db, file);
  } finally {
    db.close();
  }
  chmodSync(file, 0o600);
}

/** What `token issue --json` prints. */
export interface IssuedTokens {
  access_token: string;
  refresh_token: string;
  jti: string;
  expires_in: number;
  scope: string;
  [field: string]: unknown;
}

/** Creates a client and returns its id and secret. */
export async function createClient(store: TempStore, args: string[] = []): Promise<{ id: string; secret: string | null }> {
  const r = await store.json<{ client_id: string; client_secret: string | null }>(['client', 'create', '--name', 'test', ...args]);
  return { id: r.client_id, secret: r.client_secret };
}

export function issue(store: TempStore, clientId: string, user: string, args: string[] = []): Promise<IssuedTokens> {
  return store.json<IssuedTokens>(['token', 'issue', '--client', clientId, '--user', user, ...args]);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Issues tokens as `token issue` would, but `agoMs` in the past, through the engine on the same
 * store file: a token already expired when the CLI reads it, without waiting for real time.
 */
export async function issueInThePast(
  store: TempStore,
  clientId: string,
  user: string,
  agoMs: number,
  ttl: { accessTtlMs?: number; refreshTtlMs?: number } = {},
): Promise<IssuedTokens> {
  const [{ openStore }, { Engine }, { ManualClock }] = await Promise.all([
    import('../../src/store/open-store.js'),
    import('../../src/engine/engine.js'),
    import('../../src/engine/clock.js'),
  ]);
  const db = await openStore(store.db);
  try {
    const engine = new Engine({ store: db, clock: new ManualClock(Date.now() - agoMs) });
    return (await engine.issue({ clientId, username: user, ...ttl })) as unknown as IssuedTokens;
  } finally {
    await db.close();
  }
}

/**
 * Rotates a refresh token (as its client would, with rotation on) as of `agoMs` ago, through an
 * engine on the store file whose clock is behind: a replaced token already past the rotation race
 * window, without waiting for it.
 */
export async function rotateInThePast(store: TempStore, refreshToken: string, agoMs: number): Promise<void> {
  const [{ openStore }, { Engine }, { ManualClock }] = await Promise.all([
    import('../../src/store/open-store.js'),
    import('../../src/engine/engine.js'),
    import('../../src/engine/clock.js'),
  ]);
  const db = await openStore(store.db);
  try {
    await new Engine({ store: db, clock: new ManualClock(Date.now() - agoMs), rotateRefreshTokens: true }).refreshAsOperator(refreshToken);
  } finally {
    await db.close();
  }
}

/** Is util-linux `script` here, to give a child a pseudo-terminal? */
export function hasScript(): boolean {
  return ['/usr/bin/script', '/bin/script'].some((p) => existsSync(p));
}

const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

export interface TerminalRun {
  /** Everything the terminal showed (stdout and stderr together), colour codes included. */
  output: string;
  code: number;
}

/**
 * Runs tokenctl under a pseudo-terminal (util-linux `script`), so that stdin and stdout are
 * TTYs as for a person at a terminal. Each time the output (without colour codes) matches
 * `answers[i].when`, `answers[i].send` is typed. Bounded by `timeoutMs`.
 */
export function tokenctlInTerminal(
  args: string[],
  options: { env?: RunOptions['env']; answers?: { when: RegExp; send: string }[]; timeoutMs?: number } = {},
): Promise<TerminalRun> {
  assertBuilt();
  const home = sandboxHome();
  const command = [process.execPath, BIN, ...args].map(shellQuote).join(' ');
  return new Promise((resolvePromise, reject) => {
    const child = spawn('script', ['-qec', command, '/dev/null'], { cwd: home, env: childEnv(options.env, home), stdio: ['pipe', 'pipe', 'pipe'] });
    const answers = [...(options.answers ?? [])];
    let output = '';
    const onData = (d: string) => {
      output += d;
      const next = answers[0];
      if (next && next.when.test(stripAnsi(output))) {
        answers.shift();
        child.stdin.write(next.send);
      }
    };
    child.stdout.setEncoding('utf8').on('data', onData);
    child.stderr.setEncoding('utf8').on('data', onData);
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 20_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolvePromise({ output, code: code ?? 1 });
    });
  });
}

export function stripAnsi(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\u001b\[[0-9;?]*[A-Za-z]/g, '');
}

/** A long-running tokenctl (e.g. `serve`): its output so far, and a way to stop it. */
export interface RunningTokenctl {
  output(): { stdout: string; stderr: string };
  /** Resolves with the first match of `re` on stdout+stderr, or rejects after `timeoutMs`. */
  waitFor(re: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

export function startTokenctl(args: string[], options: RunOptions = {}): RunningTokenctl {
  assertBuilt();
  const home = sandboxHome();
  const child = spawn(process.execPath, [BIN, ...args], { cwd: home, env: childEnv(options.env, home), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  const listeners = new Set<() => void>();
  const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
  const notify = () => listeners.forEach((l) => l());
  child.stdout.setEncoding('utf8').on('data', (d: string) => ((stdout += d), notify()));
  child.stderr.setEncoding('utf8').on('data', (d: string) => ((stderr += d), notify()));
  return {
    output: () => ({ stdout, stderr }),
    waitFor(re, timeoutMs = 15_000) {
      return new Promise((resolvePromise, reject) => {
        const check = () => {
          const m = (stdout + stderr).match(re);
          if (m) {
            listeners.delete(check);
            clearTimeout(timer);
            resolvePromise(m);
          }
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`timed out waiting for ${re}:\n${stdout}\n${stderr}`));
        }, timeoutMs);
        listeners.add(check);
        void exited.then(() => check());
        check();
      });
    },
    stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}
