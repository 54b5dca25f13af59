import { onInterrupt } from './interrupt.js';

/** What long destructive work (purge, bulk revocation, migrate) is handed. */
export interface WorkControls {
  /** Aborted by the first Ctrl-C or SIGTERM: stop at the next batch boundary. */
  signal: AbortSignal;
  /** Set when a progress line is drawn (a terminal, not --json). */
  onProgress?: (done: number, total?: number) => void;
}

/**
 * Runs `work` with Ctrl-C stopping it between batches (cli/interrupt.ts) and, when `line` is
 * given and stderr is a terminal, one progress line redrawn with `\r` and wiped at the end.
 */
export async function interruptible<T>(line: ((done: number, total: number) => string) | undefined, work: (controls: WorkControls) => Promise<T>): Promise<T> {
  const showProgress = line !== undefined && Boolean(process.stderr.isTTY);
  const onProgress = showProgress ? (done: number, total = done) => void process.stderr.write(`\r${line(done, total)}`) : undefined;
  const interrupt = onInterrupt((text) => process.stderr.write(showProgress ? `\r\x1b[2K${text.trimStart()}` : text));
  try {
    return await work({ signal: interrupt.signal, onProgress });
  } finally {
    interrupt.dispose();
    if (showProgress) process.stderr.write('\r\x1b[2K');
  }
}
