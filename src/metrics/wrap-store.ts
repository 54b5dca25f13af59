import type { TokenStore } from '../store/store.js';

/** A store method, called with `this` = the store. */
export type StoreCall = (...args: unknown[]) => unknown;

/** Methods that are not store operations worth wrapping. */
const NOT_WRAPPED = new Set(['constructor', 'close', 'poolState']);

/**
 * A store whose methods are wrapped once each by `wrap` (not a Proxy: nothing is made per call
 * here). Properties (like `location`) and anything else read through to the store itself.
 */
export function wrapStore(store: TokenStore, wrap: (operation: string, call: StoreCall) => StoreCall): TokenStore {
  const wrapped = Object.create(store) as Record<string, unknown>;
  for (const name of methodNames(store)) {
    const method = (store as unknown as Record<string, StoreCall>)[name]!;
    wrapped[name] = wrap(name, method.bind(store) as StoreCall);
  }
  return wrapped as unknown as TokenStore;
}

/** The store's method names, own and inherited (classes keep theirs on prototypes). */
function methodNames(store: TokenStore): string[] {
  const names = new Set<string>();
  for (let o: object | null = store; o !== null && o !== Object.prototype; o = Object.getPrototypeOf(o) as object | null) {
    for (const name of Object.getOwnPropertyNames(o)) {
      if (NOT_WRAPPED.has(name) || name.startsWith('_')) continue;
      if (typeof Object.getOwnPropertyDescriptor(o, name)?.value === 'function') names.add(name);
    }
  }
  return [...names];
}

/**
 * Calls `call`, then `settled` once it has returned or its promise settled: `error` undefined on
 * success. A synchronous throw or a rejection is passed on unchanged after `settled`.
 */
export function whenSettled(call: () => unknown, settled: (failed: boolean, error?: unknown) => void): unknown {
  let result: unknown;
  try {
    result = call();
  } catch (error) {
    settled(true, error);
    throw error;
  }
  if (result instanceof Promise) {
    return result.then(
      (value: unknown) => {
        settled(false);
        return value;
      },
      (error: unknown) => {
        settled(true, error);
        throw error;
      },
    );
  }
  settled(false);
  return result;
}
