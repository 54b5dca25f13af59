import { MigrateError } from './errors.js';

/** Differences and failures listed by name; the rest are counted. */
export const MAX_LISTED = 20;

/** Counts for one kind of record. */
export interface CopyCounts {
  /** Records in the source. */
  source: number;
  /** Records written into the target by this run. */
  copied: number;
  /** Records the target held already (only with `merge`); left as they were. */
  present: number;
  /** Of `present`, those whose fields differ from the source's (the target's version was kept). */
  differing: number;
}

export function noCounts(source = 0): CopyCounts {
  return { source, copied: 0, present: 0, differing: 0 };
}

/** Compares each source record with what the target returns for it. */
export class Verifier {
  identical = 0;
  readonly differences: string[] = [];
  private readonly failures: string[] = [];

  constructor(private readonly location: string) {}

  check<R extends object>(what: string, expected: R, actual: R | undefined, preexisting: boolean, counts: CopyCounts): void {
    if (preexisting) counts.present++;
    if (actual === undefined) {
      this.failures.push(`${what} is missing`);
      return;
    }
    const differs = differingFields(expected, actual);
    if (differs.length === 0) {
      this.identical++;
    } else if (preexisting) {
      counts.differing++; // the target's own version, kept on purpose
      if (this.differences.length < MAX_LISTED) this.differences.push(`${what}: ${differs.join(', ')}`);
    } else {
      this.failures.push(`${what} differs in ${differs.join(', ')}`);
    }
  }

  throwIfFailed(): void {
    if (this.failures.length === 0) return;
    const shown = this.failures.slice(0, 5).join('; ');
    const more = this.failures.length > 5 ? ` and ${this.failures.length - 5} more` : '';
    throw new MigrateError(
      'verification_failed',
      `${this.failures.length} records did not read back identical from ${this.location}: ${shown}${more}`,
      'do not switch to the target; report this as a bug, with the store versions (tokenctl status)',
    );
  }
}

/** Field names whose values differ (every field of either record counts). */
export function differingFields(a: object, b: object): string[] {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...keys].filter((k) => !sameValue((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

/** Equal values; a list (a client's redirect URIs, grant types) is compared item by item, in order. */
function sameValue(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((item, i) => item === b[i]);
  return a === b;
}


export function byKey<T>(records: T[], key: (r: T) => string): Map<string, T> {
  return new Map(records.map((r) => [key(r), r]));
}
