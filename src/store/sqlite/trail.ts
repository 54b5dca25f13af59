import type Database from 'better-sqlite3';
import type { RevocationEvent } from '../event-records.js';
import type { Trail } from '../trail.js';

/**
 * Writes a change's trail (store/trail.ts) inside the change's own write step, so that the change
 * and its trail commit together: only when `changed` (true, or a count above 0), its audit line,
 * its `count` set to `changed` when that is a count, and its event, collected for the transaction's
 * one outbox row (outbox-store.ts tail). Returns `changed`.
 */
export type TrailWrite = <T extends boolean | number>(changed: T, trail: Trail) => T;

/** The store's one {@link TrailWrite}, over its audit insert and its outbox's event collector. */
export function trailWrite(insertAudit: Database.Statement, collect: (changed: boolean | number, event: RevocationEvent | undefined) => unknown): TrailWrite {
  return (changed, { audit, event }) => {
    if (!changed) return changed;
    if (audit) insertAudit.run(typeof changed === 'number' ? { ...audit, count: changed } : audit);
    collect(changed, event);
    return changed;
  };
}
