/**
 * Why `serve` could not start or had to stop. The serve layer knows nothing of exit codes: the
 * command (`commands/serve.ts`) maps `kind` to one (usage: the operator asked for something
 * impossible; failure: the machine or the store failed).
 */
export class ServeError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly kind: 'usage' | 'failure' = 'failure',
    readonly hint?: string,
  ) {
    super(message);
    this.name = 'ServeError';
  }
}
