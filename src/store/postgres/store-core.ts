import type { ClientAndToken, MintOutcome, StoreObserver } from '../store.js';
import type { AuthorizationStore, EventStore } from '../store.js';
import { ForwardsAuthorizationStore } from '../forward-authorizations.js';
import { Batcher, insertMints, MAX_BATCH, MAX_MINT_BATCH, readClientsAndTokens, revokeTokens, type Mint, type Revocation } from './batching.js';
import { Database } from './database.js';
import { PostgresEvents } from './outbox-store.js';
import { PostgresDpopProofs } from './dpop-proofs.js';
import { PostgresAuthorizations } from './authorizations.js';
import { FIRST_TUPLE } from './statements.js';
import type { PurgeScan } from './writes.js';

/** The PostgreSQL store's pool, batchers and the objects it forwards to: the design is told in store.ts. */
export abstract class PostgresStoreCore extends ForwardsAuthorizationStore {
  /** Reads and single-token revocations that arrive together share a round trip (batching.ts). */
  protected readonly reads: Batcher<{ clientId: string; digest: string | null }, ClientAndToken>;
  protected readonly revocations: Batcher<Revocation, boolean>;
  protected readonly mints: Batcher<Mint, MintOutcome>;
  /** Where this process's next purge batch scans for revoked tokens from (writes.ts). */
  protected readonly purgeScan: PurgeScan = { from: FIRST_TUPLE };
  protected readonly events: PostgresEvents;
  /** The authorization code flow's requests (authorizations.ts). */
  protected readonly authorizations: PostgresAuthorizations;
  /** The DPoP proofs seen (dpop-proofs.ts). */
  protected readonly dpopProofs: PostgresDpopProofs;

  protected constructor(
    protected readonly db: Database,
    readonly location: string,
    poolSize: number,
    observer: StoreObserver | undefined,
  ) {
    super();
    // Half the pool each at most, so that neither kind starves the other or the rest.
    const inFlight = Math.max(1, Math.floor(poolSize / 2));
    this.reads = new Batcher(readClientsAndTokens(db), inFlight, MAX_BATCH);
    const commitBatch = observer?.commitBatch?.bind(observer);
    this.revocations = new Batcher(revokeTokens(db), inFlight, MAX_BATCH, commitBatch);
    // A mint batch holds its grant locks to its commit: small, so that a revocation waits little.
    this.mints = new Batcher(insertMints(db), inFlight, MAX_MINT_BATCH, commitBatch);
    this.events = new PostgresEvents(db);
    this.authorizations = new PostgresAuthorizations(db);
    this.dpopProofs = new PostgresDpopProofs(db);
  }

  // ---- security events (outbox-store.ts): the methods forward to this (forward-events.ts) ----

  protected _eventStore(): EventStore {
    return this.events;
  }

  /** The authorization code flow's requests (authorizations.ts): the methods forward to this (forward-authorizations.ts). */
  protected _authorizationStore(): AuthorizationStore {
    return this.authorizations;
  }
}
