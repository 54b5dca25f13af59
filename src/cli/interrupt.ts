/**
 * Ctrl-C (SIGINT) and SIGTERM during long destructive work (purge, bulk revocation, migrate): the
 * first one asks the work to stop at its next batch boundary, so that what was done can be
 * printed and audited; a second one ends the process at once (exit 130), as a user expects.
 */
export interface Interrupt {
  signal: AbortSignal;
  /** Which signal arrived, if any. */
  readonly received: NodeJS.Signals | undefined;
  /** Removes the handlers: signals act as usual again. */
  dispose(): void;
}

export function onInterrupt(notice: (text: string) => void = (text) => process.stderr.write(text)): Interrupt {
  const controller = new AbortController();
  let received: NodeJS.Signals | undefined;
  const handler = (sig: NodeJS.Signals) => {
    if (received !== undefined) process.exit(130);
    received = sig;
    controller.abort(new Error(`interrupted by ${sig}`));
    notice(`\n${sig === 'SIGINT' ? 'Ctrl-C' : sig}: stopping after the current batch (again to stop at once)…\n`);
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return {
    signal: controller.signal,
    get received() {
      return received;
    },
    dispose() {
      process.off('SIGINT', handler);
      process.off('SIGTERM', handler);
    },
  };
}
