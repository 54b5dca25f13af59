import { CliError, EXIT } from './errors.js';
import { color } from './render/style.js';

/** Asks a yes/no question; resolves true for yes. */
export type AskFn = (question: string) => Promise<boolean>;

export interface ConfirmOptions {
  /** `--yes`: do not ask. */
  yes: boolean;
  /** What happened when the answer is no, e.g. "Nothing revoked". */
  declined: string;
  /** Whether there is a terminal to ask on (default: stdin is a TTY). */
  interactive?: boolean;
  /** How to ask (default: an @inquirer/prompts confirm on stderr, so stdout keeps only data). */
  ask?: AskFn;
}

/**
 * The confirmation every destructive command goes through. Returns when the operator agreed
 * (or passed --yes); otherwise throws a {@link CliError} with exit code 5 and changes nothing:
 * when the answer is no, and when there is no terminal to ask on and no --yes (a script must
 * say --yes explicitly rather than have a destructive default chosen for it).
 */
export async function confirmOrStop(question: string, options: ConfirmOptions): Promise<void> {
  if (options.yes) return;
  const interactive = options.interactive ?? Boolean(process.stdin.isTTY);
  if (!interactive) {
    // Say what would have been done (the question carries the counts), then why it was not.
    throw new CliError(
      `${options.declined}: "${question}" needs confirmation, and there is no terminal to ask on`,
      EXIT.notConfirmed,
      'not_confirmed',
      're-run with --yes to go ahead, or with --dry-run to see what would change',
    );
  }
  const ask = options.ask ?? askOnTerminal;
  if (!(await ask(question))) throw new CliError(options.declined, EXIT.notConfirmed, 'not_confirmed');
}

/** The default {@link AskFn}: "no" unless the operator types yes; Ctrl+C counts as no. */
export async function askOnTerminal(question: string): Promise<boolean> {
  const { confirm } = await import('@inquirer/prompts');
  try {
    return await confirm({ message: question, default: false, ...(color.level === 0 ? { theme: PLAIN_THEME } : {}) }, { output: process.stderr });
  } catch (err) {
    if (err instanceof Error && (err.name === 'ExitPromptError' || err.name === 'AbortPromptError')) return false;
    throw err;
  }
}

const plain = (text: string) => text;

/**
 * The prompt without colour, where tokenctl's own output has none (NO_COLOR, CI, not a terminal:
 * chalk's verdict, render/style.ts): @inquirer colours by its own rules, which ignore CI.
 */
const PLAIN_THEME = {
  prefix: { idle: '?', done: '✔' },
  style: {
    answer: plain,
    message: plain,
    error: (text: string) => `> ${text}`,
    defaultAnswer: (text: string) => `(${text})`,
    help: plain,
    highlight: plain,
    key: (text: string) => `<${text}>`,
  },
};
