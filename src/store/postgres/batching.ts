import { StoreUnavailableError, type AuditEntry, type ClientAndToken, type MintLimit, type MintOutcome, type RevocationEvent, type TokenRecord } from '../store.js';
import type { Database } from './database.js';
import { eventParams, OUTBOX_LOCK } from './event-writes.js';
import { FIND_CLIENTS_AND_TOKENS, optionalAudit, type ClientsAndTokensRow, REVOKE_ONE, REVOKE_ONE_LOGGED, REVOKE_TOKENS } from './statements.js';
import { mintOutcomes } from './writes.js';
import { TurnBatch, type Queued } from '../turn-batch.js';

/** An answer of a batch's `run` for one item that failed alone: that call is rejected with `error`. */
export class Failed {
  constructor(readonly error: unknown) {}
}

/**
 * Calls that arrive in one event-loop turn (turn-batch.ts, shared with the SQLite store) go to
 * the database together, as one statement: one round trip (and, for writes, one commit) for all
 * of them. At most `maxInFlight` batches run at once; calls that arrive meanwhile wait for the
 * next, so that batches grow with the load instead of the pool's queue. `run` answers each item
 * of a batch, in order ({@link Failed}: that call alone is rejected); a batch that throws rejects
 * every call in it.
 */
export class Batcher<I, O> {
  private readonly turn = new TurnBatch<I, O>((calls) => {
    for (const call of calls) this.waiting.push(call);
    this.flush();
  });
  /** Calls not yet sent: every batch slot was taken when their turn ended. */
  private readonly waiting: Queued<I, O>[] = [];
  private inFlight = 0;

  constructor(
    private readonly run: (items: I[]) => Promise<(O | Failed)[]>,
    private readonly maxInFlight: number,
    private readonly maxBatch: number,
    /** Told the size of every batch done (StoreObserver.commitBatch, for the writes: after its commit). */
    private readonly done?: (size: number) => void,
  ) {}

  private tell(size: number): void {
    try {
      this.done?.(size);
    } catch {
      // A watcher's failure must not fail the callers of a committed batch.
    }
  }

  add(item: I): Promise<O> {
    return this.turn.add(item);
  }

  private flush(): void {
    while (this.waiting.length > 0 && this.inFlight < this.maxInFlight) {
      const batch = this.waiting.splice(0, this.maxBatch);
      this.inFlight++;
      this.run(batch.map((w) => w.query))
        .then(
          (answers) => {
            this.tell(batch.length);
            batch.forEach((w, k) => {
              const answer = answers[k];
              if (answer instanceof Failed) w.reject(answer.error);
              else w.resolve(answer as O);
            });
          },
          (error: unknown) => batch.forEach((w) => w.reject(error)),
        )
        .finally(() => {
          this.inFlight--;
          this.flush();
        });
    }
  }
}

/** Batches of reads and of writes: each at most this many calls (bounded statement and arrays). */
export const MAX_BATCH = 500;
/** Mints in one statement at most (the grant locks held to its commit). */
export const MAX_MINT_BATCH = 50;

/** findClientAndToken for a batch: one statement, one snapshot, one row per pair in order. */
export function readClientsAndTokens(db: Database): (pairs: { clientId: string; digest: string | null }[]) => Promise<ClientAndToken[]> {
  return async (pairs) => {
    const { rows } = await db.reuse<ClientsAndTokensRow>(FIND_CLIENTS_AND_TOKENS, [pairs.map((p) => p.clientId), pairs.map((p) => p.digest)]);
    const clients = rows[0]?.clients ?? {};
    const tokens = rows[0]?.tokens ?? [];
    // Each caller its own copy of its client (several may name one); own properties only (an id may be any string).
    return pairs.map((p, k) => ({ client: Object.hasOwn(clients, p.clientId) ? { ...clients[p.clientId]! } : null, token: tokens[k] ?? null }));
  };
}

export interface Revocation {
  jti: string;
  at: number;
  audit?: AuditEntry;
  /** Written with the revocation, in the same statement (event-writes.ts). */
  event?: RevocationEvent;
}

/**
 * revokeToken without cascade for a batch: one statement, one commit; each caller is answered
 * only once it has committed ("a revocation is final"). The first call for a jti in the batch
 * decides it; later calls for the same jti in the batch find it revoked (false), as they would
 * one after another. If the batch fails, each revocation is tried again alone, so that one
 * failing revocation fails alone (unless the store is unavailable: then every one would, and does).
 */
export function revokeTokens(db: Database): (items: Revocation[]) => Promise<(boolean | Failed)[]> {
  return async (items) => {
    const first = new Map<string, Revocation>();
    for (const r of items) if (!first.has(r.jti)) first.set(r.jti, r);
    const alone = async (r: Revocation) => first.get(r.jti) === r && (await revokeOne(db, r));
    return togetherOrAlone(items, alone, async () => {
      // In jti order: two batches that share tokens lock them in the same order.
      const distinct = [...first.values()].sort((x, y) => compare(x.jti, y.jti));
      const column = <T>(f: (r: Revocation) => T) => distinct.map(f);
      const params = [
        column((r) => r.jti), column((r) => r.at), column((r) => r.audit?.at ?? 0), column((r) => r.audit?.actor ?? ''),
        column((r) => r.audit?.action ?? ''), column((r) => r.audit?.target ?? ''), column((r) => r.audit?.count ?? 0),
        column((r) => r.audit?.detail ?? ''), column((r) => r.audit !== undefined),
        column((r) => r.event?.id ?? null), column((r) => r.event?.at ?? null), column((r) => eventParams(r.event)[2]),
      ];
      const { rows } = await db.alone<{ jti: string }>(REVOKE_TOKENS, params, { lock: OUTBOX_LOCK });
      const revoked = new Set(rows.map((r) => r.jti));
      return items.map((r) => first.get(r.jti) === r && revoked.has(r.jti));
    });
  };
}

/** One revocation, with its audit line and its event, in one statement (in a transaction of its own, with the outbox's lock: writes.ts `revoking` says why). */
async function revokeOne(db: Database, r: Revocation): Promise<boolean> {
  if (r.audit === undefined && r.event === undefined) return ((await db.query(REVOKE_ONE, [r.at, r.jti])).rowCount ?? 0) === 1;
  const params = [r.at, r.jti, ...optionalAudit(r.audit), ...eventParams(r.event)];
  const { rows } = await db.alone<{ revoked: boolean }>(REVOKE_ONE_LOGGED, params, { lock: OUTBOX_LOCK });
  return rows[0]?.revoked === true;
}

export interface Mint {
  access: TokenRecord;
  refreshJti: string;
  limit?: MintLimit;
}

/**
 * insertMintedAccess for a batch: one statement (MINT_ACCESS), so one plan, one round trip and
 * one commit for all of them, each mint under its grant's lock, taken in grant order and held to
 * the commit: a revocation of one of these grants waits for the batch, then revokes what it
 * minted. If the statement fails, each mint is run again alone, so that one failing mint fails
 * alone (unless the store is unavailable).
 */
export function insertMints(db: Database): (items: Mint[]) => Promise<(MintOutcome | Failed)[]> {
  return async (items) =>
    togetherOrAlone(
      items,
      async (m) => (await mintOutcomes(db, [m]))[0]!,
      () => mintOutcomes(db, items),
    );
}

/**
 * A batch's writes: `together` for two or more (one commit), `alone` for a single one. When
 * `together` fails, nothing of it was committed, and each item is run again `alone`, one after
 * another, so that a failing one fails alone; unless the store is unavailable, which every one
 * of them would find too.
 */
async function togetherOrAlone<I, O>(items: I[], alone: (item: I) => Promise<O>, together: () => Promise<O[]>): Promise<(O | Failed)[]> {
  if (items.length === 1) return [await alone(items[0]!)];
  try {
    return await together();
  } catch (error) {
    if (error instanceof StoreUnavailableError) throw error;
    const answers: (O | Failed)[] = [];
    for (const item of items) answers.push(await alone(item).catch((e: unknown) => new Failed(e)));
    return answers;
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
