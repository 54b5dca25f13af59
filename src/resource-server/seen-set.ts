/**
 * The module's one memory of what it has seen, bounded in entries and in time, used twice: the
 * `jti`s of the SETs applied lately (RFC 8417 §2.2: `jti` lets a recipient spot a SET it has had),
 * so that a SET received again, replayed or sent again after a lost acknowledgement, is not
 * applied twice; and the DPoP proofs accepted lately (RFC 9449 §11.1), each until its `iat`
 * leaves the window, after which it is refused as too old anyway. Entries are swept from the
 * oldest: when full, those nearest to their end go first (insertion order is close to expiry
 * order, since every entry's end is about its insertion plus one window).
 */
export class SeenSet {
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly maxEntries: number,
    private readonly ttlMs: number,
  ) {}

  /**
   * Whether `key` is new (and now remembered until `until`, by default `ttlMs` from `now`); false
   * when it is remembered still.
   */
  firstTime(key: string, now: number, until = now + this.ttlMs): boolean {
    const end = this.seen.get(key);
    if (end !== undefined && end > now) return false;
    this.seen.delete(key);
    this.seen.set(key, until);
    for (const [oldest, expires] of this.seen) {
      if (this.seen.size <= this.maxEntries && expires > now) break;
      this.seen.delete(oldest);
    }
    return true;
  }

  get size(): number {
    return this.seen.size;
  }
}
