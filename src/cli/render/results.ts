/**
 * What each command returns: its `--json` document, and what its renderer turns into text.
 * Named after their commands. None holds a token or a secret, except the four that exist to
 * show one once (token issue, refresh, client create, client rotate-secret).
 */
import type { AuditEntry } from '../../store/store.js';
import type { StatusReport } from '../../engine/maintenance.js';
import type { ClientView, IntrospectionResult, RevocationResult, TokenResponse, TokenView } from '../../engine/results.js';

export type { AuditEntry, ClientView, IntrospectionResult, RevocationResult, StatusReport, TokenResponse, TokenView };

/** `client create`: the client, and its secret (null for a public client) shown this once. */
export type ClientCreateResult = ClientView & { client_secret: string | null };

/** `client rotate-secret`: the new secret, shown this once. */
export interface ClientRotateSecretResult {
  client_id: string;
  /** The store it was changed in (a PostgreSQL URL without its password). */
  store: string;
  client_secret: string;
  secret_updated_at: number;
}

/** How many tokens a client has, by state. */
export interface TokenCounts {
  total: number;
  active: number;
  expired: number;
  revoked: number;
}

/** `revoke TOKEN` on a store: spec 2.2's result, and the store it acted on. */
export type LocalRevocationResult = RevocationResult & { store: string };

/** `client show`. */
export type ClientShowResult = ClientView & { tokens: TokenCounts };

/** `client delete`: what went (or, with --dry-run, would go). */
export interface ClientDeleteResult {
  client: ClientView;
  /** Tokens deleted with the client. */
  tokens: number;
  deleted: boolean;
  dry_run: boolean;
  /** The store it was deleted from. */
  store: string;
}

/** `revoke --jti | --user | --client`. */
export interface RevokeBulkResult {
  /** What was selected, in words: `user alice of client web`. */
  selector: string;
  /** The store it acted on. */
  store: string;
  /** Active tokens the selection named when counted. */
  matched: number;
  revoked: number;
  elapsed_ms: number;
  dry_run: boolean;
  /** Stopped by Ctrl-C or SIGTERM between batches: `revoked` of `matched` were revoked (exit 130). */
  interrupted?: boolean;
}

/** `purge`. */
export interface PurgeCommandResult {
  /** The store it acted on. */
  store: string;
  older_than_ms: number;
  /** Tokens expired or revoked before this instant (ms) are purged. */
  before: number;
  /** How many qualified when counted. */
  purgeable: number;
  deleted: number;
  elapsed_ms: number;
  dry_run: boolean;
  /** Stopped by Ctrl-C or SIGTERM between batches: `deleted` of `purgeable` were deleted (exit 130). */
  interrupted?: boolean;
  /** Grant records deleted because none of their tokens was left (PostgreSQL). */
  grants_deleted: number;
  /** The audit retention (`--audit-older-than`), null for `never`; lines written before `audit_before` go. */
  audit_older_than_ms: number | null;
  audit_before: number | null;
  /** Audit lines that qualified when counted, and how many were deleted. */
  audit_purgeable: number;
  audit_deleted: number;
}
