/**
 * Text that came from outside (a receiver's error answer, a value an operator pasted) is printed
 * to a terminal: its control characters, which could move the cursor, clear the screen or set the
 * window title (ECMA-48 escape and control sequences, C0 and C1), are shown as `\u` escapes.
 */
export function printable(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
