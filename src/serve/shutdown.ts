/**
 * Resolves with the first SIGTERM or SIGINT (contract 3: graceful shutdown). A second signal
 * while shutting down calls `force`, for an operator who does not want to wait.
 */
export function waitForShutdownSignal(force: () => void): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const first = (signal: NodeJS.Signals): void => {
      process.off('SIGTERM', first);
      process.off('SIGINT', first);
      process.once('SIGTERM', force);
      process.once('SIGINT', force);
      resolve(signal);
    };
    process.on('SIGTERM', first);
    process.on('SIGINT', first);
  });
}
