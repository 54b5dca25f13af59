import { readFileSync } from 'node:fs';
import { Args, Flags } from '@oclif/core';
import { CliError, EXIT } from './errors.js';

/**
 * Where a command's token comes from: the argument, `-` (stdin), or `--token-file PATH`. stdin is
 * read only when asked for: oclif would otherwise take whatever a non-terminal stdin holds as the
 * missing argument (and, in a `while read` loop, swallow the rest of the loop's input).
 */
export function tokenArg(description: string, required = false) {
  return Args.string({
    description: `${description}; - reads it from stdin (a hidden prompt at a terminal)`,
    required,
    ignoreStdin: true,
  });
}

export const tokenFileFlag = Flags.string({
  description: 'Read the token from this file (- for stdin), so that it is not on the command line',
  helpValue: '<file>',
});

/** Tokens and secrets this process was given (from any source), kept out of debug traces. */
export const givenSecrets = new Set<string>();

/** Asks for a secret without echoing it (on stderr, so that stdout keeps only data). */
export type SecretPrompt = (message: string) => Promise<string>;

export async function promptHidden(message: string): Promise<string> {
  const { password } = await import('@inquirer/prompts');
  try {
    return await password({ message, mask: false }, { output: process.stderr });
  } catch (err) {
    if (err instanceof Error && (err.name === 'ExitPromptError' || err.name === 'AbortPromptError')) {
      throw new CliError('the prompt was cancelled: nothing done', EXIT.usage, 'usage');
    }
    throw err;
  }
}

/** Reads all of stdin (no time limit: a pipe is read to its end). */
export function readAllStdin(): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    process.stdin.on('data', (c: Buffer) => chunks.push(c));
    process.stdin.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    process.stdin.on('error', reject);
  });
}

/**
 * The token the user gave, read from where they said, cleaned with {@link cleanToken}; undefined
 * when they gave none (a bulk or --jti form of the command).
 */
export async function resolveToken(arg: string | undefined, tokenFile: string | undefined, prompt: SecretPrompt = promptHidden): Promise<string | undefined> {
  if (arg !== undefined && tokenFile !== undefined) throw new CliError('give the token once: as TOKEN, or with --token-file', EXIT.usage, 'usage');
  const source = tokenFile ?? arg;
  if (source === undefined) return undefined;
  let raw: string;
  let from: string;
  if (source === '-') {
    if (process.stdin.isTTY) {
      raw = await prompt('Token (not echoed):');
      from = 'the prompt';
    } else {
      raw = await readAllStdin();
      from = 'stdin';
    }
  } else if (tokenFile !== undefined) {
    try {
      raw = readFileSync(tokenFile, 'utf8');
    } catch (err) {
      throw new CliError(`cannot read --token-file ${tokenFile}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, EXIT.usage, 'usage');
    }
    from = tokenFile;
  } else {
    raw = source;
    from = 'the argument';
  }
  const lines = raw.split(/\r?\n/).filter((l) => l.trim() !== '');
  if (lines.length === 0) throw new CliError(`no token in ${from}: it is empty`, EXIT.usage, 'usage');
  if (lines.length > 1) throw new CliError(`${from} holds ${lines.length} lines: give one token`, EXIT.usage, 'usage', 'to act on many tokens, run the command once per line');
  const token = cleanToken(lines[0]!);
  givenSecrets.add(token);
  return token;
}

/**
 * What a paste adds around a token: surrounding whitespace, a pair of quotes, and an
 * `Authorization` header's `Bearer ` prefix. Removed: none of them can be part of a token.
 */
export function cleanToken(input: string): string {
  let token = input.trim();
  const quoted = /^(["'`])(.*)\1$/s.exec(token);
  if (quoted) token = quoted[2]!.trim();
  token = token.replace(/^(authorization:\s*)?bearer\s+/i, '').trim();
  return token;
}

/** Says what about `token` keeps it from being a token (for the "not a tokenctl token" error). */
export function describeBadToken(token: string): string | undefined {
  if (/\s/.test(token)) return 'it contains whitespace inside it (two tokens, or a token broken over lines?)';
  if (/["'`]/.test(token)) return 'it contains a quote character';
  if (/^eyJ/.test(token) && token.split('.').length === 3) return 'it looks like a JWT, which tokenctl does not issue';
  if (/^tc[ar]_/.test(token)) {
    const length = token.length - 4;
    if (length !== 43) return `it has ${length} characters after its prefix instead of 43 (cut short, or something appended?)`;
    return 'it contains characters that are not base64url';
  }
  return undefined;
}

/** A secret given as `-`: read from stdin, or asked without echo at a terminal. Other values as given. */
export async function resolveSecret(value: string | undefined, what: string, prompt: SecretPrompt = promptHidden): Promise<string | undefined> {
  if (value !== '-') {
    if (value) givenSecrets.add(value);
    return value;
  }
  const secret = (process.stdin.isTTY ? await prompt(`${what} (not echoed):`) : await readAllStdin()).trim();
  if (secret === '') throw new CliError(`no ${what.toLowerCase()} on ${process.stdin.isTTY ? 'the prompt' : 'stdin'}`, EXIT.usage, 'usage');
  givenSecrets.add(secret);
  return secret;
}
