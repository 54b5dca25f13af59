import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { execute, type Command, type Interfaces } from '@oclif/core';
import { unknownCommand } from '../cli/did-you-mean.js';
import type { RenderedError } from '../cli/errors.js';
import { formatError } from '../cli/render/errors.js';
import { COMMANDS } from '../commands/index.js';
import { RootPlugin } from './root-plugin.js';

/**
 * Runs tokenctl for `process.argv` (bin/run.js, bin/dev.js). `root` is the package directory, as a file URL.
 *
 * A command of this package starts on a configuration made from what the bundle holds (see
 * RootPlugin), without the core plugins of package.json: they add commands of their own and
 * nothing to ours (their hooks are for plugin installs), yet oclif would find and read each of
 * them from node_modules on every start. Anything else (their commands, help for the whole CLI or
 * a topic, an unknown command) starts on oclif's full configuration.
 */
export async function run(root: URL): Promise<unknown> {
  const argv = asVersionCommand(process.argv.slice(2));
  if (!isOwnCommand(argv)) {
    const unknown = unknownCommand(argv, Object.keys(COMMANDS));
    if (unknown) return reportError(unknown, argv.includes('--json'));
    return execute({ args: argv, dir: root.href });
  }
  const extra = unexpectedWord(argv);
  if (extra) return reportError(extra, argv.includes('--json'));
  const dir = fileURLToPath(root);
  const pjson = JSON.parse(readFileSync(`${dir}/package.json`, 'utf8')) as Interfaces.PJSON;
  const plugin = RootPlugin.from(dir, pjson, COMMANDS as Record<string, Command.Class>);
  if (!plugin) return execute({ args: argv, dir: root.href });
  return execute({ args: argv, loadOptions: { root: dir, pjson, plugins: new Map([[plugin.name, plugin]]) } });
}

/**
 * `tokenctl -v` and `--version` (package.json additionalVersionFlags) as `tokenctl version`, so
 * that there is one version format; oclif would print its user agent (`tokenctl/0.1.0 linux-x64 node-v20…`).
 */
function asVersionCommand(argv: string[]): string[] {
  return argv.length > 0 && (argv[0] === '-v' || argv[0] === '--version') && argv.slice(1).every((a) => a === '--json') ? ['version', ...argv.slice(1)] : argv;
}

/** An unknown command or an unexpected word, in the README's error format (or as JSON with --json), exit 2. */
function reportError(err: RenderedError, json: boolean): void {
  const { code, message, hint } = err;
  process.stderr.write((json ? JSON.stringify({ error: { code, message, hint } }) : formatError(err)) + '\n');
  process.exitCode = err.exitCode;
}

/**
 * A word after a command that takes no arguments (`tokenctl client create demo`), as the error a
 * command gives for an extra argument. oclif would read the word as part of the command's name
 * (its spaced ids: a word goes into the id unless the command takes arguments) and say
 * "command client:create:demo not found".
 */
function unexpectedWord(argv: string[]): RenderedError | undefined {
  const words = idWords(argv);
  for (let n = words.length - 1; n > 0; n--) {
    const command = (COMMANDS as Record<string, Command.Class>)[words.slice(0, n).map((w) => w.word).join(':')];
    if (command === undefined) continue;
    if (command.strict === false || Object.keys(command.args ?? {}).length > 0) return undefined;
    // What was typed from there (`purge a:b` says a:b).
    const typed = words.filter((w, i) => i >= n && w.arg === words[n]!.arg).map((w) => w.word).join(':');
    return { code: 'usage', message: `Unexpected argument: ${typed}`, exitCode: 2, hint: 'see --help for usage and examples' };
  }
  return undefined;
}

/**
 * Whether argv names one of this package's commands, as oclif reads an id: its words separated
 * by spaces (package.json `topicSeparator`) or by colons.
 */
function isOwnCommand(argv: string[]): boolean {
  const words = idWords(argv).slice(0, 2).map((w) => w.word);
  for (let n = words.length; n > 0; n--) {
    if (Object.hasOwn(COMMANDS, words.slice(0, n).join(':'))) return true;
  }
  return false;
}

/** The words before the first flag, split at colons as oclif splits an id, each with the index of its argument. */
function idWords(argv: string[]): { word: string; arg: number }[] {
  const words: { word: string; arg: number }[] = [];
  for (const [arg, text] of argv.entries()) {
    if (text.startsWith('-')) break;
    for (const word of text.split(':')) words.push({ word, arg });
  }
  return words;
}
