/** The store contract's errors: what every store throws in its drivers' stead. */

/** A client with this id exists already. */
export class DuplicateClientError extends Error {
  constructor(readonly clientId: string) {
    super(`a client with id "${clientId}" already exists`);
    this.name = 'DuplicateClientError';
  }
}

/** The file or database is not a tokenctl store. */
export class NotAStoreError extends Error {
  constructor(
    readonly location: string,
    reason: string,
  ) {
    super(`${location} is not a tokenctl store: ${reason}`);
    this.name = 'NotAStoreError';
  }
}

/** The store cannot be opened where it was pointed at: a missing directory or file. */
export class StoreLocationError extends Error {
  constructor(
    message: string,
    /** What to do about it, when the message does not say. */
    readonly hint?: string,
  ) {
    super(message);
    this.name = 'StoreLocationError';
  }
}

/**
 * There is no store where the command looked (no file, an empty file, or a PostgreSQL schema
 * without tokenctl's tables), and the command may not create one: only `serve`, `client create`
 * and `migrate --to` do, so that a mistyped location never answers from a new, empty store.
 */
export class NoStoreError extends Error {
  constructor(
    readonly location: string,
    reason: string,
  ) {
    super(`no tokenctl store at ${location}: ${reason}`);
    this.name = 'NoStoreError';
  }
}

/**
 * The store was written by a newer tokenctl: `found` is the oldest schema version whose nodes run
 * on it. A PostgreSQL store also says how far its schema went (`applied`): past `found` are only
 * steps older nodes run on, and `found` itself was raised by a step they do not (a contract).
 */
export class SchemaTooNewError extends Error {
  constructor(
    readonly location: string,
    readonly found: number,
    readonly supported: number,
    readonly applied?: number,
  ) {
    super(
      applied === undefined
        ? `${location} has schema version ${found}, but this tokenctl knows only up to ${supported}: upgrade tokenctl`
        : `${location} has schema version ${applied} and needs a tokenctl that knows schema version ${found} or later; this one knows up to ${supported}. ` +
            `Run this node from a release with schema version ${found} or later (tokenctl status --db … shows a build's and the store's); ` +
            'a store never goes back a version (see "Rolling upgrades" in docs/scale-out.md)',
    );
    this.name = 'SchemaTooNewError';
  }
}

/** The store cannot be reached right now (database down, file locked past the busy timeout). */
export class StoreUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreUnavailableError';
  }
}
