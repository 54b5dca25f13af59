import { stripVTControlCharacters } from 'node:util';
import { color } from './style.js';

/** Visible width of a string that may hold colour codes. */
export function visibleWidth(text: string): number {
  return stripVTControlCharacters(text).length;
}

function pad(text: string, width: number): string {
  return text + ' '.repeat(Math.max(0, width - visibleWidth(text)));
}

/**
 * A plain table: a dim header row and columns padded to their widest cell. Cells may be
 * coloured; widths are measured without the colour codes.
 */
export function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(visibleWidth(h), ...rows.map((r) => visibleWidth(r[i] ?? ''))));
  const line = (cells: string[]): string =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : pad(cell, widths[i]!)))
      .join('  ')
      .trimEnd();
  return [color.dim(line(headers)), ...rows.map(line)].join('\n');
}

/** `label: value` lines with the labels aligned. Entries whose value is undefined are left out. */
export function fields(entries: [label: string, value: string | undefined][]): string {
  const shown = entries.filter((e): e is [string, string] => e[1] !== undefined);
  const width = Math.max(0, ...shown.map(([label]) => label.length + 1));
  return shown.map(([label, value]) => `${color.dim(pad(`${label}:`, width))} ${value}`).join('\n');
}

/** `1 token`, `2 tokens`. */
export function plural(n: number, word: string, many = `${word}s`): string {
  return `${n} ${n === 1 ? word : many}`;
}

/** A value shown as `(none)` when empty. */
export function orNone(value: string): string {
  return value === '' ? color.dim('(none)') : value;
}

/** The line under a destructive command's result: which store it acted on. */
export function storeNote(store: string): string {
  return color.dim(`Store: ${store}`);
}

/** `35,004`: digits grouped by thousands, the same in every locale (tests and logs compare it). */
export function formatCount(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}
