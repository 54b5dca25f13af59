/** The audit trail's records (store.ts re-exports them): lines the token and event stores write. */

/** One line of the audit trail: who did what to how many. Never a token or a secret. */
export interface AuditEntry {
  id?: number;
  at: number;
  /** A client id, `cli:<os user>`, or `serve:<node>` (serve's own signing-key rotation). */
  actor: string;
  /** e.g. `token.revoke`, `token.revoke_bulk`, `client.create`, `purge` (the vocabulary: engine/audit.ts). */
  action: string;
  /**
   * What was acted on, as space-separated words: a jti, `client:<id>`, `user:<name>`,
   * `grant:<id>`. Filters match whole words.
   */
  target: string;
  /** How many tokens or clients the action changed. */
  count: number;
  /** Short free-text detail (never a secret). */
  detail: string;
}

export interface AuditFilter {
  since?: number;
  /** Entries whose target has this jti as a word. */
  jti?: string;
  /** Entries by this client (actor), or whose target has the word `client:<id>`. */
  clientId?: string;
  /** Leave out lines of these actions (the batches of a bulk operation, shown on request). */
  hideActions?: readonly string[];
  /** Only lines older than the one with this id: the next page after it. */
  beforeId?: number;
  limit?: number;
}
