import chalk from 'chalk';
import type { RenderedError } from '../errors.js';

/** `Error: message` in red, and the hint on its own line. */
export function formatError(err: RenderedError): string {
  const head = `${chalk.red.bold('Error:')} ${err.message}`;
  return err.hint ? `${head}\n${chalk.dim('Hint:')} ${err.hint}` : head;
}
