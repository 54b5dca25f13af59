/**
 * The DPoP proofs seen (RFC 9449 §11.1: "the server MAY store, in the context of the target URI,
 * the jti value of each DPoP proof for the time window in which the respective DPoP proof JWT
 * would be accepted"), shared by every process and node of the store, so that a proof replayed
 * on another node is refused too.
 */
export interface DpopProofStore {
  /**
   * Remembers the proof `key` until `until`, in one statement: true when it was not remembered
   * (or only past its `until` at `now`: the entry is reused), false when it is, a replay. Of
   * concurrent calls for one key, exactly one sees true.
   */
  rememberDpopProof(key: string, until: number, now: number): Promise<boolean>;

  /** Deletes up to `batchSize` proofs remembered until before `before`; returns how many. */
  purgeDpopProofs(before: number, batchSize: number): Promise<number>;
}
