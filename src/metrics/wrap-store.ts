import type { TokenStore } from '../store/store.js';

/** A store method, called with `this` = the store. */
export type StoreCall = (...args: unknown[]) => unknown;

/** The store's operations: its methods but `close` and `poolState` (the store's lifecycle, not work). */
type Operation = Exclude<{ [K in keyof TokenStore]-?: TokenStore[K] extends (...args: never[]) => unknown ? K : never }[keyof TokenStore], 'close' | 'poolState'>;

/**
 * Every operation that is timed and counted, by name: a method added to the contract (store/ports/)
 * without its row here does not compile, and nothing is wrapped by how its name is spelled.
 */
const OPERATIONS = {
  ackDeliveries: true,
  addSigningKey: true,
  appendAudit: true,
  claimPushReceivers: true,
  countAudit: true,
  countAuditBefore: true,
  countPurgeable: true,
  countRevocable: true,
  countTokens: true,
  createAuthorization: true,
  createClient: true,
  createReceiver: true,
  decideAuthorization: true,
  deleteClient: true,
  deleteReceiver: true,
  deleteRetiredKeys: true,
  expireDeliveries: true,
  findAuthorization: true,
  findClientAndToken: true,
  findPollReceiver: true,
  findTokenByDigest: true,
  findTokenByJti: true,
  findTokensByJti: true,
  getClient: true,
  getReceiver: true,
  insertMintedAccess: true,
  insertTokens: true,
  issueAuthorizationCode: true,
  listAudit: true,
  listClients: true,
  listReceivers: true,
  listSigningKeys: true,
  listTokens: true,
  pendingDeliveries: true,
  ping: true,
  purgeAuditBatch: true,
  purgeAuthorizations: true,
  purgeBatch: true,
  purgeDeliveredEvents: true,
  purgeDpopProofs: true,
  purgeGrantsBatch: true,
  redeemAuthorizationCode: true,
  releaseReceiver: true,
  rememberDpopProof: true,
  retryDead: true,
  revokeBulk: true,
  revokeGrant: true,
  revokeToken: true,
  rotateRefreshToken: true,
  scanTokens: true,
  schemaVersion: true,
  settleDelivery: true,
  stats: true,
  updateClientSecret: true,
  updateClientSettings: true,
  updateReceiver: true,
} as const satisfies Record<Operation, true>;

/**
 * A store whose operations are wrapped once each by `wrap` (not a Proxy: nothing is made per call
 * here). Properties (like `location`) and anything else read through to the store itself.
 */
export function wrapStore(store: TokenStore, wrap: (operation: string, call: StoreCall) => StoreCall): TokenStore {
  const wrapped = Object.create(store) as Record<string, unknown>;
  for (const name of Object.keys(OPERATIONS) as Operation[]) {
    const method = (store as unknown as Record<string, StoreCall>)[name]!;
    wrapped[name] = wrap(name, method.bind(store) as StoreCall);
  }
  return wrapped as unknown as TokenStore;
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
