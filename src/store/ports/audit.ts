import type { AuditEntry, AuditFilter } from '../audit.js';

/**
 * The audit trail on its own. A change that has a line writes it with itself, through its
 * audit argument; this port is for lines that tell of no single change (an interrupted
 * bulk operation's summary, a migration's) and for reading the trail back.
 */
export interface AuditStore {
  /** Appends one line, in a transaction of its own. */
  appendAudit(entry: AuditEntry): Promise<void>;
  /** Lines matching the filter, newest first (by id: the order they were written in). */
  listAudit(filter: AuditFilter): Promise<AuditEntry[]>;
  /** How many lines match the filter, `beforeId` and `limit` aside (every page's total). */
  countAudit(filter: Omit<AuditFilter, 'beforeId' | 'limit'>): Promise<number>;
}
