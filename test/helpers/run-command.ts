import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { format } from 'node:util';
import { join } from 'node:path';
import { Config, type Command, type Interfaces } from '@oclif/core';
import { afterAll } from 'vitest';
import type { CliResult, RunOptions } from './cli.js';
import { inheritedSettings } from './env.js';

// Before any command module is imported: cli/render/style.ts reads NO_COLOR once, as it loads.
process.env.NO_COLOR = '1';

const ROOT = join(import.meta.dirname, '../..');

let home: string | undefined;
let config: Promise<Config> | undefined;
let commands: Promise<Record<string, Command.Class>> | undefined;
/** Runs one after another: each captures this process's stdout, stderr and exit code. */
let queue: Promise<unknown> = Promise.resolve();

afterAll(() => {
  if (home !== undefined) rmSync(home, { recursive: true, force: true });
  home = undefined;
  config = undefined;
});

/**
 * oclif's configuration of this package, loaded once per test file in a private data directory.
 * Without its command list: that points oclif at the build (dist/, oclif.manifest.json), and the
 * command classes come from the sources here, so these tests need no build.
 */
function loadConfig(): Promise<Config> {
  home ??= mkdtempSync(join(tmpdir(), 'tokenctl-home-'));
  const dir = home;
  const pjson = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { oclif: Record<string, unknown> };
  const { commands: _built, ...oclif } = pjson.oclif;
  return (config ??= withEnv({ HOME: dir, XDG_DATA_HOME: join(dir, 'data'), XDG_CONFIG_HOME: join(dir, 'config') }, () =>
    Config.load({ root: ROOT, pjson: { ...pjson, oclif } as unknown as Interfaces.PJSON }),
  ));
}

/** The command classes from the TypeScript sources (src/commands/index.ts), not from the build. */
function loadCommands(): Promise<Record<string, Command.Class>> {
  return (commands ??= import('../../src/commands/index.js').then((m) => m.COMMANDS as Record<string, Command.Class>));
}

async function withEnv<T>(env: Record<string, string | undefined>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  const set = (values: Record<string, string | undefined>) => {
    for (const [k, v] of Object.entries(values)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };
  set(env);
  try {
    return await fn();
  } finally {
    set(saved);
  }
}

/**
 * Runs `tokenctl ...args` inside this process: the command class from the sources, run by
 * oclif's `Command.run(argv, config)` as the binary would, with stdout, stderr and the exit code
 * captured. For what needs no process of its own; stdin, signals, a terminal, the start-up and
 * oclif's help and command lookup are the binary's (`tokenctl()` in cli.ts).
 * TOKENCTL_TEST_BINARY=1 runs them through the binary instead (the built package), to compare.
 */
export function runCommand(args: string[], options: RunOptions = {}): Promise<CliResult> {
  if (process.env.TOKENCTL_TEST_BINARY) return import('./cli.js').then(({ tokenctl }) => tokenctl(args, options));
  if (options.input !== undefined) throw new Error('runCommand has no stdin: use tokenctl() (the binary) for input');
  const run = queue.then(() => runNow(args, options));
  queue = run.catch(() => undefined);
  return run;
}

async function runNow(args: string[], options: RunOptions): Promise<CliResult> {
  const [cfg, classes] = await Promise.all([loadConfig(), loadCommands()]);
  const { id, argv } = commandOf(args, classes);
  const command = classes[id]!;
  command.id = id;
  let stdout = '';
  let stderr = '';
  const writeOut = process.stdout.write;
  const writeErr = process.stderr.write;
  const savedExitCode = process.exitCode;
  process.exitCode = undefined;
  const capture = (append: (text: string) => void) =>
    ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      append(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
      const done = rest.find((r) => typeof r === 'function') as (() => void) | undefined;
      done?.();
      return true;
    }) as typeof process.stdout.write;
  process.stdout.write = capture((t) => (stdout += t));
  process.stderr.write = capture((t) => (stderr += t));
  // oclif writes through console.log/console.error (ux/write.js), which vitest intercepts.
  const consoleSaved = { log: console.log, info: console.info, warn: console.warn, error: console.error };
  console.log = console.info = (...args: unknown[]) => void (stdout += `${format(...args)}\n`);
  console.warn = console.error = (...args: unknown[]) => void (stderr += `${format(...args)}\n`);
  let code: number;
  try {
    // The private home again: oclif's Command.run loads the configuration anew (its data and config
    // directories from HOME and XDG_*), and without it the default store would be the user's own.
    const own = { HOME: home!, XDG_DATA_HOME: join(home!, 'data'), XDG_CONFIG_HOME: join(home!, 'config') };
    const cleared = Object.fromEntries(inheritedSettings().map((key) => [key, undefined]));
    const env = { ...cleared, ...own, ...options.env };
    code = await withEnv(env, async () => {
      try {
        await command.run(argv, cfg);
        return typeof process.exitCode === 'number' ? process.exitCode : 0;
      } catch (err) {
        const exit = (err as { oclif?: { exit?: number } }).oclif?.exit;
        if (typeof exit === 'number') return exit;
        stderr += `${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`;
        return 1;
      }
    });
  } finally {
    process.stdout.write = writeOut;
    process.stderr.write = writeErr;
    Object.assign(console, consoleSaved);
    process.exitCode = savedExitCode;
  }
  return {
    stdout,
    stderr,
    code,
    json() {
      try {
        return JSON.parse(stdout);
      } catch {
        throw new Error(`stdout is not one JSON document (exit ${code}):\n${stdout}\n--- stderr:\n${stderr}`);
      }
    },
  };
}

/** The command id of argv (`client create` or `client:create`) and the arguments after it. */
function commandOf(args: string[], classes: Record<string, Command.Class>): { id: string; argv: string[] } {
  for (const n of [2, 1]) {
    const words = args.slice(0, n);
    if (words.length < n || words.some((w) => w.startsWith('-'))) continue;
    const id = words.join(':');
    if (Object.hasOwn(classes, id)) return { id, argv: args.slice(n) };
  }
  throw new Error(`runCommand: no command in ${JSON.stringify(args)} (help and unknown commands are the binary's: use tokenctl())`);
}
