const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** The longest token lifetime (--access-ttl, --refresh-ttl): the engine's, a year. */
export { MAX_LIFETIME_MS } from '../engine/settings.js';
/** The longest duration of any kind (e.g. purge --older-than): a hundred years. */
export const MAX_DURATION_MS = 36_525 * UNITS.d!;

/**
 * Parses a duration like `90s`, `15m`, `1h`, `30d`, `2w`, `1h30m` or `500ms` into milliseconds.
 * A bare number is refused: `30` could mean seconds or days, and a guess here costs a lifetime.
 * Units are lower case: `M` (minutes? months?) and the other capitals are refused, not guessed.
 */
export function parseDuration(input: string, max = MAX_DURATION_MS): number {
  const text = input.trim();
  const upper = /\d\s*([A-Z]+)/.exec(text);
  if (upper) {
    const unit = upper[1]!;
    const why = unit === 'M' ? 'M could mean minutes or months: write m for minutes, or days (30d)' : `units are lower case (${unit.toLowerCase()})`;
    throw new DurationError(input, why);
  }
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
  if (total > max) throw new DurationError(input, `the longest accepted is ${describeMax(max)}`);
  return Math.round(total);
}

function describeMax(max: number): string {
  return max % UNITS.d! === 0 ? `${max / UNITS.d!}d` : `${max / 1000}s`;
}

export class DurationError extends Error {
  constructor(
    readonly input: string,
    why?: string,
  ) {
    super(
      why
        ? `"${input}" is not accepted as a duration: ${why}`
        : `"${input}" is not a duration: use a number with a unit, like 90s, 15m, 1h, 30d or 1h30m`,
    );
    this.name = 'DurationError';
  }
}
