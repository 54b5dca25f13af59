import { StoreLocationError } from './errors.js';
import type { OpenStoreOptions, TokenStore } from './store.js';
import * as memory from './memory/kind.js';
import * as postgres from './postgres/kind.js';
import * as sqlite from './sqlite/kind.js';

export type { OpenStoreOptions } from './store.js';

/** What every store folder's index.ts exports: how to open it, and what serve may ask of it first. */
export interface StoreDoor {
  open(location: string, options: OpenStoreOptions): Promise<TokenStore>;
  /**
   * A pooled store: what `serve` should warn about the server's connection budget when this node
   * may open `processes` pools of `poolSize` connections (undefined: room enough, or no pool).
   */
  connectionBudgetWarning?(location: string, poolSize: number | undefined, processes: number): Promise<string | undefined>;
}

/** One row of {@link STORE_KINDS}: a store folder's kind.ts, and its door, loaded when used. */
interface StoreKind {
  name: string;
  /** Whether a location names a store of this kind. */
  matches(location: string): boolean;
  /** A file on this machine (resolved, checked to exist), or a URL compared as written. */
  isFile: boolean;
  /** Whether the location itself holds a secret (a password in a URL). */
  showsPassword(location: string): boolean;
  /** Whether one of its driver's errors means a lost race or a timeout, worth trying again. */
  isConflictOrTimeout(error: unknown): boolean;
  /** The folder's index.ts, imported lazily, so a command loads only the driver it uses. */
  load(): Promise<StoreDoor>;
}

/**
 * Every kind of store, in the order a location is tried: the first whose `matches` says yes opens
 * it. The only code that inspects a location: a new store is a folder (copied from one of these,
 * with its kind.ts), one row here, and its contract test file.
 */
const STORE_KINDS: readonly StoreKind[] = [
  { name: 'postgres', ...postgres, load: () => import('./postgres/index.js') },
  { name: 'memory', ...memory, load: () => import('./memory/index.js') },
  // Last: a location no other kind claims is a file path.
  { name: 'sqlite', ...sqlite, load: () => import('./sqlite/index.js') },
];

/** What a location of every kind looks like, for the error that refuses one of none. */
const SUPPORTED = 'a SQLite file path or a postgres:// (postgresql://) URL';

/** A URL scheme (`mysql://`), which a file path does not start with. */
const SCHEME = /^([a-z][a-z0-9+.-]*):\/\//i;

/** The kind of store at `location`. */
export function storeKindOf(location: string): { name: string; isFile: boolean; showsPassword: boolean } {
  const kind = kindOf(location);
  return { name: kind.name, isFile: kind.isFile, showsPassword: kind.showsPassword(location) };
}

function kindOf(location: string): StoreKind {
  const kind = STORE_KINDS.find((k) => k.matches(location)) ?? STORE_KINDS[STORE_KINDS.length - 1]!;
  const scheme = SCHEME.exec(location)?.[1];
  // A URL no kind claims would otherwise fall to the file kind and become a file named "mysql:".
  if (kind.isFile && scheme !== undefined) {
    throw new StoreLocationError(`${scheme}:// is not a kind of store tokenctl knows`, `a store is ${SUPPORTED}`);
  }
  if (location.trim() === '') throw new StoreLocationError('the store location is empty', `a store is ${SUPPORTED}`);
  return kind;
}

/** Whether a store's error means a lost race or a timeout (any kind's driver), for metrics. */
export function isConflictOrTimeout(error: unknown): boolean {
  return STORE_KINDS.some((kind) => kind.isConflictOrTimeout(error));
}

/**
 * The composition point: the store at `location`, of the kind {@link STORE_KINDS} finds for it
 * (a file path opens SQLite, a `postgres://` URL PostgreSQL).
 */
export async function openStore(location: string, options: OpenStoreOptions = {}): Promise<TokenStore> {
  const door = await kindOf(location).load();
  return door.open(location, options);
}

/**
 * What `serve` should warn about the store's connection budget when this node may open
 * `processes` pools of `poolSize` connections, or undefined (room enough, or a store without a
 * pool). The check needs its own connection, for a moment.
 */
export async function connectionBudgetWarning(location: string, poolSize: number | undefined, processes: number): Promise<string | undefined> {
  const door = await kindOf(location).load();
  return door.connectionBudgetWarning?.(location, poolSize, processes);
}
