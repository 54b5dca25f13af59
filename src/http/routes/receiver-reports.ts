import { performance } from 'node:perf_hooks';
import type { SetError } from '../../events/poll.js';

/** SETs of one report shown in the log line; the rest are counted. */
const SAMPLE = 3;

/**
 * What reaches the server log of the SET errors a poll receiver reports (RFC 8936 §2.4.3): its
 * own text, up to the poll body's 64 KiB each time. A log line tells how many, with a few
 * samples cut short and their control characters replaced, and at most one line per receiver
 * per `intervalMs`: the reports in between are counted and told in the next line. A receiver
 * cannot flood the log or write into an operator's terminal through it.
 */
export class ReceiverReports {
  private readonly last = new Map<string, { at: number; suppressed: number }>();

  constructor(
    private readonly intervalMs = 60_000,
    private readonly now: () => number = () => performance.now(),
    private readonly maxReceivers = 10_000,
  ) {}

  /** The fields of the warning to log for `setErrs`, or undefined while this receiver's last one is recent. */
  report(receiverId: string, setErrs: Record<string, SetError>): Record<string, unknown> | undefined {
    const entries = Object.entries(setErrs);
    if (entries.length === 0) return undefined;
    const now = this.now();
    const seen = this.last.get(receiverId);
    if (seen !== undefined && now - seen.at < this.intervalMs) {
      seen.suppressed += entries.length;
      return undefined;
    }
    this.last.delete(receiverId);
    this.last.set(receiverId, { at: now, suppressed: 0 });
    if (this.last.size > this.maxReceivers) this.last.delete(this.last.keys().next().value!);
    return {
      receiver: receiverId,
      count: entries.length,
      ...(seen && seen.suppressed > 0 ? { notLoggedSince: seen.suppressed } : {}),
      sample: entries.slice(0, SAMPLE).map(([jti, e]) => ({ jti: clip(jti, 64), err: clip(e.err, 40), ...(e.description !== undefined ? { description: clip(e.description, 120) } : {}) })),
    };
  }
}

/** At most `max` characters, control characters (C0, C1, line separators) as `?`. */
function clip(text: string, max: number): string {
  // eslint-disable-next-line no-control-regex
  const clean = text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, '?');
  return clean.length > max ? clean.slice(0, max) + '…' : clean;
}
