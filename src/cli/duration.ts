const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/**
 * Parses a duration like `90s`, `15m`, `1h`, `30d`, `2w`, `1h30m` or `500ms` into milliseconds.
 * A bare number is refused: `30` could mean seconds or days, and a guess here costs a lifetime.
 */
export function parseDuration(input: string): number {
  const text = input.trim().toLowerCase();
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h|d|w)/gy;
  let total = 0;
  let consumed = 0;
  for (let match = re.exec(text); match; match = re.exec(text)) {
    total += Number(match[1]) * UNITS[match[2]!]!;
    consumed = re.lastIndex;
  }
  if (text === '' || consumed !== text.length || !Number.isFinite(total)) {
    throw new DurationError(input);
  }
  return Math.round(total);
}

export class DurationError extends Error {
  constructor(readonly input: string) {
    super(`"${input}" is not a duration: use a number with a unit, like 90s, 15m, 1h, 30d or 1h30m`);
    this.name = 'DurationError';
  }
}
