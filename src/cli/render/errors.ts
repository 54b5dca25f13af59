import { color } from './style.js';
import type { RenderedError } from '../errors.js';

/** `Error: message` in red, and the hint on its own line. */
export function formatError(err: RenderedError): string {
  const head = `${color.red.bold('Error:')} ${err.message}`;
  return err.hint ? `${head}\n${color.dim('Hint:')} ${err.hint}` : head;
}
