import { StoreUnavailableError } from '../store/store.js';

/** How long a storage fault met by a request keeps /healthz at 503. */
const REMEMBER_MS = 10_000;

/**
 * The storage faults the server's requests met lately (a full disk, a read-only or failing
 * store), so that `/healthz` reports a fault its own checks cannot provoke: a write that would
 * need a new page fails on a full disk, the health check's write that changes nothing does not.
 */
export class StoreFaults {
  private last: { at: number; message: string } | null = null;

  constructor(private readonly now: () => number = Date.now) {}

  /** Records `err` if it is a storage fault. */
  note(err: unknown): void {
    if (err instanceof StoreUnavailableError) this.last = { at: this.now(), message: err.message };
  }

  /** The fault met within the last {@link REMEMBER_MS}, or null. */
  recent(): string | null {
    return this.last !== null && this.now() - this.last.at < REMEMBER_MS ? this.last.message : null;
  }
}
