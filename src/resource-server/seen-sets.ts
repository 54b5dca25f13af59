/**
 * The `jti`s of the SETs applied lately (RFC 8417 §2.2: `jti` lets a recipient spot a SET it has
 * had), so that a SET received again, replayed by whoever captured it or sent again by the
 * transmitter after a lost acknowledgement, is not applied twice. Bounded in entries and in time:
 * a SET older than `ttlMs` could only drop answers cached since, which a replay then costs once
 * more, never a revoked token accepted.
 */
export class SeenSets {
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly maxEntries: number,
    private readonly ttlMs: number,
  ) {}

  /** Whether `jti` is new (and now remembered), false when it was seen within `ttlMs`. */
  firstTime(jti: string, now: number): boolean {
    const at = this.seen.get(jti);
    if (at !== undefined && now - at < this.ttlMs) return false;
    this.seen.delete(jti);
    this.seen.set(jti, now);
    // Map order is insertion order: the oldest go first.
    for (const [oldest, when] of this.seen) {
      if (this.seen.size <= this.maxEntries && now - when < this.ttlMs) break;
      this.seen.delete(oldest);
    }
    return true;
  }

  get size(): number {
    return this.seen.size;
  }
}
