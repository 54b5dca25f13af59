export type MigrateErrorCode = 'same_store' | 'source_empty' | 'target_not_empty' | 'source_changed' | 'verification_failed';

/** A migration that must not go ahead, or that went wrong in a way the operator must know. */
export class MigrateError extends Error {
  constructor(
    readonly code: MigrateErrorCode,
    message: string,
    readonly hint?: string,
  ) {
    super(message);
    this.name = 'MigrateError';
  }
}
