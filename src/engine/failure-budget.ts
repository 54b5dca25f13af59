/** A budget of failures: at most `burst` at once, refilled at `perMinute`. */
export interface BudgetLimits {
  burst: number;
  perMinute: number;
}

/**
 * Leaky-bucket counters of failed client authentications, one per key (a source address, a
 * client id, or the pair). Each failure adds 1; the level drains at `perMinute`; a key whose
 * level has reached `burst` is exhausted until it drains. At most `maxKeys` keys are kept (the
 * least recently failed are forgotten first), so a flood of made-up ids cannot grow memory.
 */
export class FailureBudget {
  private readonly levels = new Map<string, { level: number; at: number }>();
  private readonly drainPerMs: number;

  constructor(
    private readonly limits: BudgetLimits,
    private readonly now: () => number,
    private readonly maxKeys = 100_000,
  ) {
    this.drainPerMs = limits.perMinute / 60_000;
  }

  /** The level of `key` now (0: no failure on record, or all drained). */
  level(key: string): number {
    const entry = this.levels.get(key);
    if (entry === undefined) return 0;
    return Math.max(0, entry.level - (this.now() - entry.at) * this.drainPerMs);
  }

  /** Whether one more failure would pass the burst. */
  exhausted(key: string): boolean {
    return this.level(key) + 1 > this.limits.burst;
  }

  /** Whole seconds until `key` has room for one failure again (at least 1). */
  retryAfterSeconds(key: string): number {
    const excess = this.level(key) + 1 - this.limits.burst;
    return Math.max(1, Math.ceil(excess / this.drainPerMs / 1000));
  }

  /** Takes back one failure charged by {@link fail} (the attempt turned out to succeed). */
  refund(key: string): void {
    const entry = this.levels.get(key);
    if (entry !== undefined) entry.level = Math.max(0, entry.level - 1);
  }

  fail(key: string): void {
    const level = this.level(key) + 1;
    this.levels.delete(key);
    this.levels.set(key, { level, at: this.now() });
    if (this.levels.size > this.maxKeys) this.levels.delete(this.levels.keys().next().value!);
  }
}

/**
 * The key of a source address: an IPv4 address as is, an IPv6 one by its /64 prefix (one host
 * commonly holds a whole /64, so counting single addresses would give it 2^64 budgets).
 */
export function sourceKey(address: string): string {
  const v4 = /^(?:::ffff:)?(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (v4) return v4[1]!;
  if (!address.includes(':')) return address;
  const [head = '', tail = ''] = address.split('%')[0]!.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === '' ? [] : tail.split(':');
  const groups = address.includes('::') ? [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right] : left;
  return groups.slice(0, 4).map((g) => g.toLowerCase().replace(/^0+(?=.)/, '')).join(':') + '::/64';
}
