/**
 * The token store: the only place tokenctl keeps state.
 *
 * The engine talks to this interface and nothing else; SQLite (`sqlite/`), PostgreSQL
 * (`postgres/`) and the in-memory reference (`memory/`) implement it. Stores never see a raw
 * token or client secret: tokens arrive as SHA-256 digests, secrets as salted scrypt hashes.
 *
 * Every operation that must be atomic is one method here (rotation, grant revocation, bulk
 * revocation), never a transaction handed to the caller: better-sqlite3 transactions cannot span
 * an `await`, and PostgreSQL needs conditional updates or row locks instead.
 *
 * All times are integer milliseconds since the Unix epoch.
 */

import type { AuditStore } from './ports/audit.js';
import type { AuthorizationStore } from './ports/authorizations.js';
import type { ClientStore } from './ports/clients.js';
import type { MaintenanceStore } from './ports/maintenance.js';
import type { OutboxStore } from './ports/outbox.js';
import type { SigningKeyStore } from './ports/signing-keys.js';
import type { TokenReads } from './ports/token-reads.js';
import type { TokenWrites } from './ports/token-writes.js';
import type { DpopProofStore } from './ports/dpop-proofs.js';
import type { PoolState } from './records.js';

// The contract's records, errors and ports, so that one import names them all.
export type * from './records.js';
export type * from './event-records.js';
export type * from './audit.js';
export type * from './authorization-records.js';
export type { AuditStore, AuthorizationStore, ClientStore, DpopProofStore, MaintenanceStore, OutboxStore, SigningKeyStore, TokenReads, TokenWrites };
export { tokenState, TOKEN_TYPES } from './records.js';
export * from './errors.js';
export { DEFAULT_RETENTION_MS, DuplicateReceiverError, isPausedStream, RETENTION_ERROR } from './event-records.js';

/**
 * The security events' part of a store (the outbox, its receivers, the signing keys): what the
 * deliverer, the poll endpoint and the key manager are handed.
 */
export type EventStore = OutboxStore & SigningKeyStore;

/**
 * The storage contract: every port of `ports/`, one screen each, and the store's own lifecycle.
 * Implementations: `MemoryStore`, `SqliteStore`, `PostgresStore`. A single store may be used by
 * several processes at once (the CLI beside a running server, several server nodes): every
 * answer reflects what is committed, and nothing is cached. An engine module declares the ports
 * it uses (engine/context.ts `EngineContext<Ports>`), not the whole of this.
 */
export interface TokenStore extends ClientStore, TokenReads, TokenWrites, AuthorizationStore, MaintenanceStore, AuditStore, OutboxStore, SigningKeyStore, DpopProofStore {
  /** A short description for operators: the file path or database URL without password. */
  readonly location: string;

  /** Current schema version of the store. */
  schemaVersion(): Promise<number>;


  /** Checks the store answers (for /healthz). Rejects if it does not. */
  ping(): Promise<void>;

  /** Releases files and connections. The store is unusable afterwards. */
  close(): Promise<void>;

  /**
   * A pooled store only (PostgreSQL): its connections now, for metrics. Cheap and synchronous;
   * a store without a pool leaves it undefined.
   */
  poolState?(): PoolState;
}
