/**
 * Times as operators read them: an absolute date (UTC, so that every node and every log agree)
 * and a relative one ("in 42 min", "3 d ago"). Pure: `now` is always passed in.
 */

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** `2025-03-01 14:05:09 UTC`. */
export function formatDate(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').replace(/\.\d{3}Z$/, ' UTC');
}

/** A span of time in the largest unit that keeps it readable: `45 s`, `42 min`, `5 h`, `3 d`. */
export function formatSpan(ms: number): string {
  const abs = Math.abs(ms);
  if (abs < MINUTE) return `${Math.floor(abs / SECOND)} s`;
  if (abs < 2 * HOUR) return `${Math.floor(abs / MINUTE)} min`;
  if (abs < 2 * DAY) return `${Math.floor(abs / HOUR)} h`;
  return `${Math.floor(abs / DAY)} d`;
}

/** `in 42 min`, `3 d ago`, or `now` within a second. */
export function formatRelative(ms: number, now: number): string {
  const diff = ms - now;
  if (Math.abs(diff) < SECOND) return 'now';
  return diff > 0 ? `in ${formatSpan(diff)}` : `${formatSpan(diff)} ago`;
}

/** `2025-03-01 14:05:09 UTC (in 42 min)`. */
export function formatInstant(ms: number, now: number): string {
  return `${formatDate(ms)} (${formatRelative(ms, now)})`;
}

/** An elapsed time for summaries: `35 ms`, `1.2 s`, `3 min`. */
export function formatElapsed(ms: number): string {
  if (ms < SECOND) return `${Math.round(ms)} ms`;
  if (ms < MINUTE) return `${(ms / SECOND).toFixed(1)} s`;
  return formatSpan(ms);
}

/** A lifetime in seconds as a duration flag would be written: `3600` → `1h`, `90` → `90s`. */
export function formatTtl(seconds: number): string {
  if (seconds % 86_400 === 0) return `${seconds / 86_400}d`;
  if (seconds % 3600 === 0) return `${seconds / 3600}h`;
  if (seconds % 60 === 0) return `${seconds / 60}m`;
  return `${seconds}s`;
}
