/** What a readiness check needs of the store: a read that changes nothing. */
export interface ReadinessStore {
  ping(): Promise<void>;
}

/** Why a node is not ready, as `/health/ready` tells it. */
export type NotReady = 'draining' | 'store_unavailable';

/** How long a readiness check waits for the store unless told otherwise: a request's database budget. */
export const DEFAULT_READINESS_TIMEOUT_MS = 5_000;

/**
 * Whether this node should be sent requests (contract 6): not while it drains, and only while the
 * store answers a read within `timeoutMs`. Each check asks the store anew and remembers nothing,
 * so a node is ready again with the store's first answer; it never writes, so a probe every
 * second costs the database one read.
 */
export class Readiness {
  private drainingNow = false;

  constructor(
    private readonly store: ReadinessStore,
    private readonly timeoutMs: number = DEFAULT_READINESS_TIMEOUT_MS,
  ) {}

  /** From now on the node is not ready: a load balancer takes it out while it still serves. */
  drain(): void {
    this.drainingNow = true;
  }

  get draining(): boolean {
    return this.drainingNow;
  }

  /** Null when ready; otherwise why not. Never rejects. */
  async check(): Promise<NotReady | null> {
    if (this.draining) return 'draining';
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<NotReady>((resolve) => {
      timer = setTimeout(() => resolve('store_unavailable'), this.timeoutMs);
      timer.unref();
    });
    const answered = this.store.ping().then(
      () => (this.draining ? 'draining' : null),
      (): NotReady => 'store_unavailable',
    );
    try {
      return await Promise.race([answered, timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }
}
